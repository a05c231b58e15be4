package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/protocol/mqtt/packet"
	"github.com/karmanmq/karman/protocol/mqtt/route"
	"github.com/karmanmq/karman/protocol/mqtt/server"
)

// certHooks lets in a client by its verified certificate (as user
// cert:CN) or as dev or dev2 with password secret, denies MQTT topics
// under secret/, and denies dev2 reading every topic at once.
type certHooks struct{}

func (certHooks) Authenticate(_ context.Context, c *hook.Credentials) (hook.Principal, error) {
	if c.Certificate != nil {
		return hook.Principal{Name: "cert:" + c.Certificate.Subject.CommonName}, nil
	}
	if (c.Username != "dev" && c.Username != "dev2") || string(c.Password) != "secret" {
		return hook.Principal{}, hook.Unauthenticated("bad username or password")
	}
	return hook.Principal{Name: c.Username}, nil
}

func (certHooks) Authorize(_ context.Context, p hook.Principal, a hook.Action, r hook.Resource) error {
	if r.Type == hook.ResourceMQTT && strings.HasPrefix(r.Name, "secret/") {
		return hook.Deny("not for devices")
	}
	if r == hook.AllTopics && p.Name == "dev2" {
		return hook.Deny("not every topic")
	}
	return nil
}

// TestWildcardFirstLevel: a filter whose first level is a wildcard reads
// from every topic, and is authorized as hook.AllTopics; one with a
// literal first level as that topic.
func TestWildcardFirstLevel(t *testing.T) {
	addr, _ := startGuarded(t, nil)
	for _, tc := range []struct {
		user, filter string
		want         packet.ReasonCode
	}{
		{"dev2", "#", packet.NotAuthorized},
		{"dev2", "+/x", packet.NotAuthorized},
		{"dev2", "open/#", 1},
		{"dev", "#", 1},
		{"dev", "+/x", 1},
	} {
		c, ack := dialRaw(t, addr, packet.Version5, &packet.Connect{ClientID: "w-" + tc.user, CleanStart: true,
			UsernameFlag: true, Username: tc.user, PasswordFlag: true, Password: []byte("secret")})
		if ack.ReasonCode != 0 {
			t.Fatalf("%s: CONNACK %v", tc.user, ack.ReasonCode)
		}
		if sa := c.subscribe(1, packet.Subscription{Filter: tc.filter, QoS: 1}); sa.ReasonCodes[0] != tc.want {
			t.Errorf("%s SUBSCRIBE %s: %v, want %v", tc.user, tc.filter, sa.ReasonCodes[0], tc.want)
		}
		c.nc.Close()
	}
}

// startGuarded serves MQTT on an engine with certHooks: over TCP, and
// over TLS with tc (nil: no TLS listener).
func startGuarded(t *testing.T, tc *tls.Config) (plain, secure string) {
	t.Helper()
	srv, plain, stop := serveGuarded(t, t.TempDir())
	t.Cleanup(stop)
	if tc == nil {
		return plain, ""
	}
	tln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(tls.NewListener(tln, tc))
	return plain, tln.Addr().String()
}

// serveGuarded serves MQTT over TCP on an engine in dir with certHooks
// until stop.
func serveGuarded(t *testing.T, dir string) (srv *server.Server, addr string, stop func()) {
	t.Helper()
	r := route.New()
	e, err := engine.Open(dir, &engine.Options{Router: r, AutoCreateTopics: true, SegmentSize: 4 << 20, Hooks: []any{certHooks{}}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err = server.New(e, r, nil)
	if err != nil {
		e.Close()
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		e.Close()
		t.Fatal(err)
	}
	go srv.Serve(ln)
	return srv, ln.Addr().String(), func() { srv.Close(); e.Close() }
}

// TestSessionOwner: a persistent session is resumed by the user that
// made it, across a restart, and not by another user connecting with its
// client id, who starts a new session without its subscriptions.
func TestSessionOwner(t *testing.T) {
	dir := t.TempDir()
	_, addr, stop := serveGuarded(t, dir)
	login := func(addr, user, id string) (*raw, *packet.Connack) {
		cp := &packet.Connect{ClientID: id, UsernameFlag: true, Username: user, PasswordFlag: true, Password: []byte("secret")}
		cp.Properties.SessionExpiry = 300
		return dialRaw(t, addr, packet.Version5, cp)
	}
	for _, id := range []string{"mine", "taken"} {
		c, ack := login(addr, "dev", id)
		if ack.ReasonCode != 0 || ack.SessionPresent {
			t.Fatalf("%s: CONNACK %v present %v", id, ack.ReasonCode, ack.SessionPresent)
		}
		if sa := c.subscribe(1, packet.Subscription{Filter: "open/" + id, QoS: 1}); sa.ReasonCodes[0] != 1 {
			t.Fatalf("%s: SUBACK %v", id, sa.ReasonCodes)
		}
		c.send(&packet.Disconnect{})
		c.nc.Close()
	}
	stop()
	_, addr, stop = serveGuarded(t, dir)
	defer stop()
	if _, ack := login(addr, "dev", "mine"); ack.ReasonCode != 0 || !ack.SessionPresent {
		t.Fatalf("the owner after a restart: CONNACK %v present %v, want its session", ack.ReasonCode, ack.SessionPresent)
	}
	other, ack := login(addr, "dev2", "taken")
	if ack.ReasonCode != 0 || ack.SessionPresent {
		t.Fatalf("another user: CONNACK %v present %v, want a new session", ack.ReasonCode, ack.SessionPresent)
	}
	// The owner's subscription went with its session: a message to it
	// does not reach the other user, who gets its own next.
	if sa := other.subscribe(2, packet.Subscription{Filter: "open/dev2", QoS: 1}); sa.ReasonCodes[0] != 1 {
		t.Fatalf("SUBACK %v", sa.ReasonCodes)
	}
	pub, _ := login(addr, "dev", "pub")
	for i, topic := range []string{"open/taken", "open/dev2"} {
		pub.send(&packet.Publish{PacketID: uint16(i + 1), QoS: 1, Topic: topic, Payload: []byte(topic)})
		pub.expect(packet.PUBACK)
	}
	if p := other.expect(packet.PUBLISH).(*packet.Publish); p.Topic != "open/dev2" {
		t.Fatalf("the other user received %s", p.Topic)
	}
	// The session is the other user's now, also after a restart; the
	// owner, back, finds its own gone.
	other.send(&packet.Disconnect{})
	other.nc.Close()
	stop()
	_, addr, stop = serveGuarded(t, dir)
	defer stop()
	if _, ack := login(addr, "dev2", "taken"); !ack.SessionPresent {
		t.Fatal("the new owner lost the session it took, across a restart")
	}
	if _, ack := login(addr, "dev", "taken"); ack.SessionPresent {
		t.Fatal("the owner resumed a session another user had taken")
	}
}

// TestWillAuthorized: a will is a publish the client asks for at
// CONNECT, refused there when its topic is not the client's to publish
// to (5.0: 0x87 with a reason; 3.1.1: return code 5).
func TestWillAuthorized(t *testing.T) {
	addr, _ := startGuarded(t, nil)
	for _, tc := range []struct {
		v     byte
		topic string
		want  packet.ReasonCode
	}{
		{packet.Version5, "secret/x", packet.NotAuthorized},
		{packet.Version311, "secret/x", packet.V3RefusedNotAuthorized},
		{packet.Version5, "open/x", packet.Success},
		{packet.Version311, "open/x", packet.Success},
	} {
		cp := &packet.Connect{ClientID: "w", CleanStart: true, UsernameFlag: true, Username: "dev", PasswordFlag: true, Password: []byte("secret"),
			Will: &packet.Will{Topic: tc.topic, Payload: []byte("gone")}}
		_, ack := dialRaw(t, addr, tc.v, cp)
		if ack.ReasonCode != tc.want {
			t.Errorf("v%d will on %s: CONNACK %v, want %v", tc.v, tc.topic, ack.ReasonCode, tc.want)
		}
		if tc.v == packet.Version5 && tc.want != packet.Success && !strings.Contains(ack.Properties.ReasonString, "not for devices") {
			t.Errorf("v5 will on %s: reason %q", tc.topic, ack.Properties.ReasonString)
		}
	}
}

// TestClientCertificate: a certificate the TLS layer verified reaches
// the Authenticator (Credentials.Certificate); one it only received,
// unverified, does not.
func TestClientCertificate(t *testing.T) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(cn string) tls.Certificate {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn}, DNSNames: []string{cn},
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	serverCert := issue("localhost")
	device := issue("d1")

	for _, tc := range []struct {
		name   string
		auth   tls.ClientAuthType
		cert   bool
		user   string
		want   packet.ReasonCode
		reason string
	}{
		{"verified", tls.VerifyClientCertIfGiven, true, "", packet.Success, ""},
		{"no certificate", tls.VerifyClientCertIfGiven, false, "", packet.BadUserNameOrPassword, "bad username or password"},
		{"password instead", tls.VerifyClientCertIfGiven, false, "dev", packet.Success, ""},
		{"received, not verified", tls.RequireAnyClientCert, true, "", packet.BadUserNameOrPassword, "bad username or password"},
	} {
		_, addr := startGuarded(t, &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientCAs: pool, ClientAuth: tc.auth})
		conf := &tls.Config{RootCAs: pool, ServerName: "localhost"}
		if tc.cert {
			conf.Certificates = []tls.Certificate{device}
		}
		nc, err := tls.Dial("tcp", addr, conf)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		t.Cleanup(func() { nc.Close() })
		r := &raw{t: t, nc: nc, dec: packet.NewDecoder(nc), v: packet.Version5}
		r.dec.Version = packet.Version5
		cp := &packet.Connect{Version: packet.Version5, ClientID: "c", CleanStart: true}
		if tc.user != "" {
			cp.UsernameFlag, cp.Username, cp.PasswordFlag, cp.Password = true, tc.user, true, []byte("secret")
		}
		r.send(cp)
		ack, ok := r.read().(*packet.Connack)
		if !ok {
			t.Fatalf("%s: no CONNACK", tc.name)
		}
		if ack.ReasonCode != tc.want || !strings.Contains(ack.Properties.ReasonString, tc.reason) {
			t.Errorf("%s: CONNACK %v %q, want %v %q", tc.name, ack.ReasonCode, ack.Properties.ReasonString, tc.want, tc.reason)
		}
	}
}
