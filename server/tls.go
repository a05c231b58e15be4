package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"time"
)

// ListenerCertificate returns the certificate of a module's TLS listener:
// the one in certFile and keyFile (PEM), or, when both are empty, a
// self-signed one made now. flag names the module's flags in errors
// ("grpc-tls" for --grpc-tls-cert and --grpc-tls-key).
func ListenerCertificate(certFile, keyFile, flag string) (tls.Certificate, error) {
	switch {
	case certFile != "" && keyFile != "":
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("--%s-cert/--%s-key: %w", flag, flag, err)
		}
		return cert, nil
	case certFile != "" || keyFile != "":
		return tls.Certificate{}, fmt.Errorf("--%s-cert and --%s-key go together; give both, or neither for a self-signed certificate", flag, flag)
	}
	cert, err := SelfSignedCertificate()
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("making a self-signed certificate: %w", err)
	}
	return cert, nil
}

// SelfSignedCertificate makes a certificate for "karman" and "localhost",
// valid for a year, for listeners whose clients do not check certificates
// (RocketMQ's Java client by default) or are told to trust it.
func SelfSignedCertificate() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "karman"},
		DNSNames:     []string{"karman", "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
