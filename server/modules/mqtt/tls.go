package mqtt

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"os"
	"time"
)

// tlsConfig returns the TLS settings of the MQTT TLS listener: the
// certificate and key in certFile and keyFile, or, when both are empty, a
// self-signed certificate made at start-up (clients then connect with
// --insecure, or trust it explicitly). With clientCAFile, clients are
// asked for a certificate, and one given must verify against the CAs in
// it (clients without one still connect, and authenticate otherwise).
func tlsConfig(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	switch {
	case certFile != "" && keyFile != "":
		if cert, err = tls.LoadX509KeyPair(certFile, keyFile); err != nil {
			return nil, fmt.Errorf("mqtt: --mqtt-tls-cert/--mqtt-tls-key: %w", err)
		}
	case certFile != "" || keyFile != "":
		return nil, fmt.Errorf("mqtt: --mqtt-tls-cert and --mqtt-tls-key go together; give both, or neither for a self-signed certificate")
	default:
		if cert, err = selfSigned(); err != nil {
			return nil, fmt.Errorf("mqtt: making a self-signed certificate: %w", err)
		}
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCAFile != "" {
		pemCAs, err := os.ReadFile(clientCAFile)
		if err != nil {
			return nil, fmt.Errorf("mqtt: --mqtt-tls-client-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pemCAs) {
			return nil, fmt.Errorf("mqtt: --mqtt-tls-client-ca %s: %w", clientCAFile, ErrNoCACertificate)
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}
	return tc, nil
}

// ErrNoCACertificate: the --mqtt-tls-client-ca file holds no PEM
// certificate.
var ErrNoCACertificate = errors.New("no PEM certificate in the file")

// selfSigned makes a certificate for "karman" and "localhost", valid for
// a year. (The gRPC front-end has the same helper in its transport
// package, which an MQTT-only binary does not link.)
func selfSigned() (tls.Certificate, error) {
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
