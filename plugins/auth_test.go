package plugins

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"maps"
	"math/big"
	"net/netip"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/hook"
)

// TestAuthenticateCredentials: an authentication plugin receives what
// an MQTT client presents: its username, password and client id, and the
// client certificate its TLS connection verified (parsed again on the
// plugin's side from the DER).
func TestAuthenticateCredentials(t *testing.T) {
	t.Setenv("KARMAN_TESTPLUGIN", "auth")
	p := load(t, "auth="+program("testplugin"), Options{})
	set, err := hook.Sort(p.Hooks())
	if err != nil {
		t.Fatal(err)
	}
	cert := testCertificate(t, pkix.Name{CommonName: "device-7", Organization: []string{"Acme"}})
	sum := sha256.Sum256(cert.Raw)
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		c        hook.Credentials
		want     string
		wantAttr map[string]string
	}{
		{"password", hook.Credentials{Protocol: "mqtt", Addr: netip.MustParseAddrPort("127.0.0.1:5"), Username: "dev", Password: []byte("pw\x00"), ClientID: "d1"},
			"dev", map[string]string{"protocol": "mqtt", "username": "dev", "password": "pw\x00", "client_id": "d1"}},
		{"certificate", hook.Credentials{Protocol: "mqtt", ClientID: "d7", Certificate: cert},
			"cert:device-7", map[string]string{"protocol": "mqtt", "username": "", "password": "", "client_id": "d7",
				"cert_cn": "device-7", "cert_subject": "CN=device-7,O=Acme", "cert_sha256": hex.EncodeToString(sum[:])}},
	} {
		pr, err := set.Authenticate(ctx, &tc.c)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if pr.Name != tc.want || !maps.Equal(pr.Attributes, tc.wantAttr) {
			t.Errorf("%s: principal %q %v, want %q %v", tc.name, pr.Name, pr.Attributes, tc.want, tc.wantAttr)
		}
	}
}

func testCertificate(t *testing.T, subject pkix.Name) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: subject, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}
