package mqtt

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	karman "github.com/karmanmq/karman/server"
)

// tlsConfig returns the TLS settings of the MQTT TLS listener: the
// certificate and key in certFile and keyFile, or, when both are empty, a
// self-signed certificate made at start-up (clients then connect with
// --insecure, or trust it explicitly). With clientCAFile, clients are
// asked for a certificate, and one given must verify against the CAs in
// it (clients without one still connect, and authenticate otherwise).
func tlsConfig(certFile, keyFile, clientCAFile string) (*tls.Config, error) {
	cert, err := karman.ListenerCertificate(certFile, keyFile, Name+"-tls")
	if err != nil {
		return nil, fmt.Errorf("mqtt: %w", err)
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
