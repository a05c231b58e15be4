package mqtt_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/mqtt/packet"
	"github.com/karmanmq/karman/server"
	mqttfe "github.com/karmanmq/karman/server/modules/mqtt"
)

// testCA is a certificate authority made for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// client issues a client certificate of subject CN=cn.
func (ca *testCA) client(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// TestTLSClientCA: with --mqtt-tls-client-ca, a client certificate of
// that CA is accepted, one of another CA fails the handshake, and a
// client without one still connects (it authenticates otherwise).
func TestTLSClientCA(t *testing.T) {
	ca, other := newTestCA(t, "devices CA"), newTestCA(t, "other CA")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	addrs := start(t, "--mqtt-tls-client-ca", caFile)
	connect, _ := (&packet.Connect{Version: packet.Version311, ClientID: "tls", CleanStart: true}).AppendTo(nil, packet.Version311)
	for _, tc := range []struct {
		name  string
		certs []tls.Certificate
		ok    bool
	}{
		{"the CA's", []tls.Certificate{ca.client(t, "d1")}, true},
		{"none", nil, true},
		{"another CA's", []tls.Certificate{other.client(t, "d1")}, false},
	} {
		conf := &tls.Config{InsecureSkipVerify: true}
		if tc.certs != nil {
			// Send it whatever CAs the server names (Go's client would
			// otherwise leave out a certificate of another CA).
			conf.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &tc.certs[0], nil }
		}
		c, err := tls.Dial("tcp", addrs["mqtt-tls"], conf)
		if err != nil {
			t.Fatalf("%s: dial: %v", tc.name, err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		// TLS 1.3: a refused client certificate shows on the first read.
		_, err = c.Write(connect)
		ack := make([]byte, 4)
		if err == nil {
			_, err = io.ReadFull(c, ack)
		}
		c.Close()
		switch {
		case tc.ok && (err != nil || string(ack) != "\x20\x02\x00\x00"):
			t.Errorf("%s certificate: CONNACK % x, %v", tc.name, ack, err)
		case !tc.ok && err == nil:
			t.Errorf("%s certificate: served (CONNACK % x)", tc.name, ack)
		case !tc.ok && !strings.Contains(err.Error(), "certificate"):
			t.Errorf("%s certificate: %v, want a TLS certificate error", tc.name, err)
		}
	}
}

func TestValidateClientCA(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--mqtt-tls-client-ca", filepath.Join(dir, "absent.pem")}, "--mqtt-tls-client-ca"},
		{[]string{"--mqtt-tls-client-ca", notPEM}, "no PEM certificate"},
		{[]string{"--mqtt-tls-client-ca", notPEM, "--mqtt-tls-addr", "off"}, "needs the TLS listener"},
	} {
		opts, err := server.NewOptions(mqttfe.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := opts.Flags.Parse(append([]string{"--data", t.TempDir(), "--mqtt-addr", "127.0.0.1:0"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		_, err = server.New(*opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
}
