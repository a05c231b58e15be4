package grpc

import (
	"crypto/tls"
	"fmt"

	karman "github.com/karmanmq/karman/server"
)

// tlsConfig returns the TLS settings of the endpoint: the certificate and
// key in certFile and keyFile, or, when both are empty, a self-signed
// certificate made at start-up. RocketMQ 5 clients open TLS by default
// and, like RocketMQ's proxy in its default mode, Karman serves them on
// the same port as plaintext clients; the Java client trusts any
// certificate unless told otherwise, so a self-signed one serves it.
func tlsConfig(certFile, keyFile string) (*tls.Config, error) {
	cert, err := karman.ListenerCertificate(certFile, keyFile, Name+"-tls")
	if err != nil {
		return nil, fmt.Errorf("grpc: %w", err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"h2"},
		MinVersion:   tls.VersionTLS12,
	}, nil
}
