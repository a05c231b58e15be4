package grpc

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestTLSConfig(t *testing.T) {
	c, err := tlsConfig("", "")
	if err != nil {
		t.Fatalf("self-signed: %v", err)
	}
	if len(c.Certificates) != 1 || !slices.Contains(c.NextProtos, "h2") {
		t.Fatalf("self-signed config: %d certificates, ALPN %v", len(c.Certificates), c.NextProtos)
	}
	if _, err := tlsConfig("cert.pem", ""); err == nil || !strings.Contains(err.Error(), "go together") {
		t.Fatalf("a certificate without a key: %v", err)
	}
	missing := filepath.Join(t.TempDir(), "missing.pem")
	if _, err := tlsConfig(missing, missing); err == nil || !strings.Contains(err.Error(), "--grpc-tls-cert") {
		t.Fatalf("missing files: %v", err)
	}
}
