package grpc

import (
	"crypto/tls"
	"fmt"

	"github.com/karmanmq/karman/protocol/grpc/transport"
)

// tlsConfig returns the TLS settings of the endpoint: the certificate and
// key in certFile and keyFile, or, when both are empty, a self-signed
// certificate made at start-up. RocketMQ 5 clients open TLS by default
// and, like RocketMQ's proxy in its default mode, Karman serves them on
// the same port as plaintext clients; the Java client trusts any
// certificate unless told otherwise, so a self-signed one serves it.
func tlsConfig(certFile, keyFile string) (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	switch {
	case certFile != "" && keyFile != "":
		cert, err = tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("grpc: --grpc-tls-cert/--grpc-tls-key: %w", err)
		}
	case certFile != "" || keyFile != "":
		return nil, fmt.Errorf("grpc: --grpc-tls-cert and --grpc-tls-key go together; give both, or neither for a self-signed certificate")
	default:
		if cert, err = transport.SelfSignedCertificate(); err != nil {
			return nil, fmt.Errorf("grpc: making a self-signed certificate: %w", err)
		}
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"h2"},
		MinVersion:   tls.VersionTLS12,
	}, nil
}
