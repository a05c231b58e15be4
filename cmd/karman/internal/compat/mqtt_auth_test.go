//go:build !race && linux

package compat

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	paho "github.com/eclipse/paho.golang/paho"
	mqtt "github.com/eclipse/paho.mqtt.golang"
)

// The users of TestMQTTAuth besides the super user.
const (
	deviceUser   = "device" // Pub and Sub on Topic:devices and mqtt:devices/%c/#
	deviceSecret = "device-secret"
	watcher      = "watcher" // Sub on Topic:devices only
	watcherPW    = "watcher-secret"
	appUser      = "app" // the RocketMQ consumer of the devices' messages
	appSecret    = "app-secret"
)

// clientCA issues client certificates for a test.
type clientCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newClientCA(t *testing.T) *clientCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "devices CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &clientCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// sign makes a certificate of subject CN=cn for a client, or for a
// server at 127.0.0.1.
func (ca *clientCA) sign(t *testing.T, cn string, server bool) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn, Organization: []string{"devices"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return der, key
}

// issue makes a client certificate of subject CN=cn and a TLS client
// configuration presenting it (it does not verify the server's).
func (ca *clientCA) issue(t *testing.T, cn string) *tls.Config {
	t.Helper()
	der, key := ca.sign(t, cn, false)
	return &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
}

// files writes a certificate of CN=cn and its key as PEM files in dir.
func (ca *clientCA) files(t *testing.T, dir, cn string, server bool) (certFile, keyFile string) {
	t.Helper()
	der, key := ca.sign(t, cn, server)
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, cn+".pem"), filepath.Join(dir, cn+".key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// pahoV5 is a paho.golang client and what it receives.
type pahoV5 struct {
	*paho.Client
	in chan *paho.Publish
}

// connectV5 connects a paho.golang (MQTT 5.0) client to addr, over TLS
// with tc unless it is nil, with user and password unless user is "".
// A refused CONNECT returns the CONNACK and an error.
func connectV5(t *testing.T, addr string, tc *tls.Config, id, user, pw string) (*pahoV5, *paho.Connack, error) {
	t.Helper()
	var nc net.Conn
	var err error
	if tc != nil {
		nc, err = tls.Dial("tcp", addr, tc)
	} else {
		nc, err = net.Dial("tcp", addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	c := &pahoV5{in: make(chan *paho.Publish, 100)}
	c.Client = paho.NewClient(paho.ClientConfig{Conn: nc, OnPublishReceived: []func(paho.PublishReceived) (bool, error){
		func(r paho.PublishReceived) (bool, error) { c.in <- r.Packet; return true, nil },
	}})
	cp := &paho.Connect{ClientID: id, CleanStart: true, KeepAlive: 30}
	if user != "" {
		cp.UsernameFlag, cp.Username, cp.PasswordFlag, cp.Password = true, user, true, []byte(pw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, err := c.Connect(ctx, cp)
	if err != nil {
		nc.Close()
		return nil, ack, err
	}
	t.Cleanup(func() { c.Disconnect(&paho.Disconnect{}) })
	return c, ack, nil
}

// wantConnack fails the test unless a 5.0 CONNECT was refused with code
// and a reason string containing reason.
func wantConnack(t *testing.T, what string, ack *paho.Connack, err error, code byte, reason string) {
	t.Helper()
	if err == nil || ack == nil || ack.ReasonCode != code || ack.Properties == nil || !strings.Contains(ack.Properties.ReasonString, reason) {
		var got any = ack
		if ack != nil {
			got = fmt.Sprintf("code %#x %+v", ack.ReasonCode, ack.Properties)
		}
		t.Fatalf("%s: CONNACK %v (%v), want %#x saying %q", what, got, err, code, reason)
	}
}

// publishV5 publishes body at QoS 1 and returns the PUBACK's reason code
// and reason string.
func (c *pahoV5) publish(t *testing.T, topic, body string) (byte, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := c.Publish(ctx, &paho.Publish{Topic: topic, QoS: 1, Payload: []byte(body)})
	if r == nil {
		t.Fatalf("publish %s: no PUBACK: %v", topic, err)
	}
	if (r.ReasonCode >= 0x80) != (err != nil) {
		t.Fatalf("publish %s: code %#x with error %v", topic, r.ReasonCode, err)
	}
	reason := ""
	if r.Properties != nil {
		reason = r.Properties.ReasonString
	}
	return r.ReasonCode, reason
}

// subscribe subscribes to filter at QoS 1 and returns the SUBACK's code.
func (c *pahoV5) subscribe(t *testing.T, filter string) byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sa, err := c.Subscribe(ctx, &paho.Subscribe{Subscriptions: []paho.SubscribeOptions{{Topic: filter, QoS: 1}}})
	if sa == nil || len(sa.Reasons) != 1 {
		t.Fatalf("subscribe %s: %+v %v", filter, sa, err)
	}
	return sa.Reasons[0]
}

// connectV3 connects a paho.mqtt.golang (MQTT 3.1.1) client; a refused
// CONNECT returns its return code.
func connectV3(t *testing.T, broker string, tc *tls.Config, id, user, pw string, in *mqttInbox) (mqtt.Client, byte, error) {
	t.Helper()
	o := mqtt.NewClientOptions().AddBroker(broker).SetClientID(id).SetCleanSession(true).
		SetAutoReconnect(false).SetProtocolVersion(4).SetConnectTimeout(10 * time.Second).SetConnectRetry(false)
	if tc != nil {
		o.SetTLSConfig(tc)
	}
	if user != "" {
		o.SetUsername(user).SetPassword(pw)
	}
	if in != nil {
		o.SetDefaultPublishHandler(in.handler)
	}
	c := mqtt.NewClient(o)
	tok := c.Connect()
	if !tok.WaitTimeout(10 * time.Second) {
		t.Fatalf("connect %s: timed out", id)
	}
	if err := tok.Error(); err != nil {
		return nil, tok.(*mqtt.ConnectToken).ReturnCode(), err
	}
	t.Cleanup(func() { c.Disconnect(100) })
	return c, 0, nil
}

// subscribeV3 returns the SUBACK's return code for filter.
func subscribeV3(t *testing.T, c mqtt.Client, filter string) byte {
	t.Helper()
	tok := c.Subscribe(filter, 1, nil)
	if !tok.WaitTimeout(10 * time.Second) {
		t.Fatalf("subscribe %s: timed out", filter)
	}
	code, ok := tok.(*mqtt.SubscribeToken).Result()[filter]
	if !ok {
		t.Fatalf("subscribe %s: no return code (%v)", filter, tok.Error())
	}
	return code
}

// TestMQTTAuth runs the real binary with --auth and --mqtt-tls-client-ca;
// the users and policies are made with its admin commands, among them a
// device user confined to devices/<client id>/... by mqtt:devices/%c/#.
// paho.golang (5.0), paho.mqtt.golang (3.1.1) and mosquitto_pub/sub (both
// versions) connect with the user's name and secret, or over TLS with a
// client certificate naming the user; what they may not do is refused
// with the protocol's codes, logged and counted; a RocketMQ consumer with
// credentials receives what the devices were let publish.
func TestMQTTAuth(t *testing.T) {
	// One CA signs the server's certificate and the clients'.
	ca, pki := newClientCA(t), t.TempDir()
	caFile := filepath.Join(pki, "ca.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	serverCert, serverKey := ca.files(t, pki, "server", true)
	deviceCert, deviceKey := ca.files(t, pki, deviceUser, false)
	k := startBinary(t, "--auth", "--auth-init-user", aclRoot, "--auth-init-secret", aclRootSecret,
		"--mqtt-tls-cert", serverCert, "--mqtt-tls-key", serverKey, "--mqtt-tls-client-ca", caFile)
	const topic, group = "devices", "device-readers"
	k.cli("topic", "create", topic, "--queues", "2")
	k.cli("user", "create", deviceUser, "--secret", deviceSecret)
	k.cli("acl", "create", deviceUser, "--resource", "Topic:"+topic, "--actions", "Pub,Sub", "--decision", "Allow")
	k.cli("acl", "create", deviceUser, "--resource", "mqtt:devices/%c/#", "--actions", "Pub,Sub", "--decision", "Allow")
	k.cli("user", "create", watcher, "--secret", watcherPW)
	k.cli("acl", "create", watcher, "--resource", "Topic:"+topic, "--actions", "Sub", "--decision", "Allow")
	k.cli("user", "create", appUser, "--secret", appSecret)
	k.cli("acl", "create", appUser, "--resource", "Topic:"+topic, "--actions", "Sub", "--decision", "Allow")
	k.cli("acl", "create", appUser, "--resource", "Group:"+group, "--actions", "Sub", "--decision", "Allow")
	if out := k.cli("acl", "get", deviceUser); !strings.Contains(out, "mqtt:devices/%c/#") {
		t.Fatalf("acl get %s:\n%s", deviceUser, out)
	}
	k.waitRoute(topic)
	ctx := context.Background()

	// What the broker must refuse, counted as it goes, to hold the
	// metrics to.
	var unauthenticated, denied int
	// What the devices may publish, and what they may not.
	var allowed, stray []string

	// The RocketMQ consumer, with credentials.
	got := newReceived()
	rc, err := consumer.NewPushConsumer(
		consumer.WithNameServer([]string{k.namesrv}),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance("mqtt-app")),
		consumer.WithCredentials(primitive.Credentials{AccessKey: appUser, SecretKey: appSecret}),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Subscribe(topic, consumer.MessageSelector{}, func(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		got.add(msgs...)
		return consumer.ConsumeSuccess, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := rc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Shutdown() })

	// Authentication: the right secret connects; a wrong one, an
	// unknown user and none are refused (5.0: 0x86, 3.1.1: 4).
	d1, _, err := connectV5(t, k.mqtt, nil, "d1", deviceUser, deviceSecret)
	if err != nil {
		t.Fatalf("5.0 CONNECT with the right secret: %v", err)
	}
	_, ack, err := connectV5(t, k.mqtt, nil, "d1x", deviceUser, "wrong")
	wantConnack(t, "5.0 CONNECT with a wrong secret", ack, err, 0x86, "bad username or password")
	_, ack, err = connectV5(t, k.mqtt, nil, "g1", "ghost", deviceSecret)
	wantConnack(t, "5.0 CONNECT of an unknown user", ack, err, 0x86, "bad username or password")
	_, ack, err = connectV5(t, k.mqtt, nil, "anon", "", "")
	wantConnack(t, "5.0 CONNECT without a username", ack, err, 0x86, "no username")
	unauthenticated += 3
	for _, user := range []string{deviceUser, "ghost"} {
		if _, code, err := connectV3(t, "tcp://"+k.mqtt, nil, "v3-"+user, user, "wrong", nil); err == nil || code != 4 {
			t.Fatalf("3.1.1 CONNECT of %s with a wrong secret: code %d, %v; want 4", user, code, err)
		}
		unauthenticated++
	}

	// A 5.0 device confined to devices/d1/...
	if code := d1.subscribe(t, "devices/d1/#"); code != 1 {
		t.Fatalf("5.0 SUBSCRIBE devices/d1/#: %#x", code)
	}
	for _, f := range []string{"devices/other/#", "devices/#"} {
		if code := d1.subscribe(t, f); code != 0x87 {
			t.Fatalf("5.0 SUBSCRIBE %s: %#x, want 0x87", f, code)
		}
		denied++
	}
	for i := range 3 {
		body := fmt.Sprint("d1-temp-", i)
		if code, reason := d1.publish(t, "devices/d1/temp", body); code != 0 {
			t.Fatalf("5.0 PUBLISH devices/d1/temp: %#x %s", code, reason)
		}
		allowed = append(allowed, body)
	}
	code, reason := d1.publish(t, "devices/other/temp", "d1-stray")
	if code != 0x87 || !strings.Contains(reason, "Pub on mqtt:devices/other/temp by device") {
		t.Fatalf("5.0 PUBLISH devices/other/temp: %#x %q, want 0x87 naming it", code, reason)
	}
	denied++
	stray = append(stray, "d1-stray")
	for i := range 3 {
		select {
		case p := <-d1.in:
			if p.Topic != "devices/d1/temp" || string(p.Payload) != fmt.Sprint("d1-temp-", i) {
				t.Fatalf("d1 received %s %q", p.Topic, p.Payload)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("d1 received %d of its own 3 messages", i)
		}
	}

	// A 3.1.1 device confined to devices/d2/...: its refused PUBLISH is
	// acknowledged (3.1.1 has no negative PUBACK) and dropped.
	cmds := newInbox()
	d2, _, err := connectV3(t, "tcp://"+k.mqtt, nil, "d2", deviceUser, deviceSecret, cmds)
	if err != nil {
		t.Fatalf("3.1.1 CONNECT with the right secret: %v", err)
	}
	if code := subscribeV3(t, d2, "devices/d2/cmd"); code != 1 {
		t.Fatalf("3.1.1 SUBSCRIBE devices/d2/cmd: %#x", code)
	}
	if code := subscribeV3(t, d2, "devices/other/#"); code != 0x80 {
		t.Fatalf("3.1.1 SUBSCRIBE devices/other/#: %#x, want 0x80", code)
	}
	denied++
	waitToken(t, "3.1.1 PUBLISH devices/d2/status", d2.Publish("devices/d2/status", 1, false, "d2-up"))
	allowed = append(allowed, "d2-up")
	waitToken(t, "3.1.1 PUBLISH devices/other/status (acknowledged, dropped)", d2.Publish("devices/other/status", 1, false, "d2-stray"))
	denied++
	stray = append(stray, "d2-stray")
	if !d2.IsConnectionOpen() {
		t.Fatal("a refused 3.1.1 PUBLISH closed the connection")
	}
	// A command from a RocketMQ producer with the super user's
	// credentials reaches the device.
	cmd := primitive.NewMessage(topic, []byte("reboot"))
	cmd.WithTag("d2/cmd")
	if _, err := aclProducer(t, k.namesrv, aclRoot, aclRootSecret).SendSync(ctx, cmd); err != nil {
		t.Fatal(err)
	}
	cmds.waitFor(t, "the command at d2", func() bool { return cmds.count("devices/d2/cmd=reboot") == 1 })

	// A user without any Pub right: 5.0 PUBACK 0x87; 3.1.1 dropped.
	w1, _, err := connectV5(t, k.mqtt, nil, "w1", watcher, watcherPW)
	if err != nil {
		t.Fatal(err)
	}
	if code, reason := w1.publish(t, "devices/w1/x", "w1-stray"); code != 0x87 || !strings.Contains(reason, "Pub on Topic:devices by watcher") {
		t.Fatalf("5.0 PUBLISH without a Pub right: %#x %q, want 0x87", code, reason)
	}
	// Nor may it read every topic with a filter whose first level is a
	// wildcard (Sub on Topic:devices only); a super user may.
	if code := w1.subscribe(t, "#"); code != 0x87 {
		t.Fatalf("5.0 SUBSCRIBE # with Sub on one topic: %#x, want 0x87", code)
	}
	denied++
	root, _, err := connectV5(t, k.mqtt, nil, "root", aclRoot, aclRootSecret)
	if err != nil {
		t.Fatal(err)
	}
	if code := root.subscribe(t, "#"); code != 1 {
		t.Fatalf("5.0 SUBSCRIBE # as the super user: %#x", code)
	}
	w2, _, err := connectV3(t, "tcp://"+k.mqtt, nil, "w2", watcher, watcherPW, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitToken(t, "3.1.1 PUBLISH without a Pub right (acknowledged, dropped)", w2.Publish("devices/w2/x", 1, false, "w2-stray"))
	denied += 2
	stray = append(stray, "w1-stray", "w2-stray")

	// TLS with a client certificate naming the device user: no password;
	// still confined by its client id.
	d9, _, err := connectV5(t, k.mqttTLS, ca.issue(t, deviceUser), "d9", "", "")
	if err != nil {
		t.Fatalf("5.0 over TLS with a client certificate: %v", err)
	}
	if code, reason := d9.publish(t, "devices/d9/x", "d9-tls"); code != 0 {
		t.Fatalf("5.0 PUBLISH over TLS: %#x %s", code, reason)
	}
	if code, _ := d9.publish(t, "devices/d1/x", "d9-stray"); code != 0x87 {
		t.Fatalf("5.0 PUBLISH over TLS to another device: %#x, want 0x87", code)
	}
	denied++
	allowed, stray = append(allowed, "d9-tls"), append(stray, "d9-stray")
	d8, _, err := connectV3(t, "ssl://"+k.mqttTLS, ca.issue(t, deviceUser), "d8", "", "", nil)
	if err != nil {
		t.Fatalf("3.1.1 over TLS with a client certificate: %v", err)
	}
	waitToken(t, "3.1.1 PUBLISH over TLS", d8.Publish("devices/d8/x", 1, false, "d8-tls"))
	allowed = append(allowed, "d8-tls")
	_, ack, err = connectV5(t, k.mqttTLS, ca.issue(t, "ghost"), "g9", "", "")
	wantConnack(t, "5.0 over TLS with a certificate of an unknown user", ack, err, 0x86, "common name ghost is no user")
	_, ack, err = connectV5(t, k.mqttTLS, ca.issue(t, deviceUser), "g8", watcher, watcherPW)
	wantConnack(t, "5.0 over TLS with a certificate and another user's name", ack, err, 0x86, "username watcher is not the client certificate's common name device")
	unauthenticated += 2
	if _, _, err := connectV5(t, k.mqttTLS, &tls.Config{InsecureSkipVerify: true}, "d7", deviceUser, deviceSecret); err != nil {
		t.Fatalf("5.0 over TLS without a certificate, with the secret: %v", err)
	}

	// mosquitto_pub -u -P and mosquitto_sub, in both versions.
	host, port, _ := net.SplitHostPort(k.mqtt)
	for _, v := range []string{"mqttv311", "mqttv5"} {
		id := "m-" + v
		mos := func(tool string, args ...string) *exec.Cmd {
			c := exec.Command(tool, append([]string{"-h", host, "-p", port, "-V", v}, args...)...)
			c.WaitDelay = time.Second
			return c
		}
		out, err := mos("mosquitto_pub", "-i", id, "-u", deviceUser, "-P", "wrong", "-q", "1", "-t", "devices/"+id+"/x", "-m", "no").CombinedOutput()
		if err == nil || !strings.Contains(strings.ToLower(string(out)), "password") {
			t.Fatalf("%s mosquitto_pub with a wrong password: %v %s", v, err, out)
		}
		unauthenticated++
		subs := k.metric("karman_mqtt_subscriptions")
		sub := mos("mosquitto_sub", "-i", id, "-u", deviceUser, "-P", deviceSecret, "-q", "1", "-t", "devices/"+id+"/#", "-v", "-C", "1", "-W", "30")
		var subOut strings.Builder
		sub.Stdout, sub.Stderr = &subOut, &subOut
		if err := sub.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for k.metric("karman_mqtt_subscriptions") == subs {
			if time.Now().After(deadline) {
				t.Fatalf("%s mosquitto_sub did not subscribe: %s", v, subOut.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if out, err := mos("mosquitto_pub", "-u", aclRoot, "-P", aclRootSecret, "-q", "1", "-t", "devices/"+id+"/cmd", "-m", "go-"+v).CombinedOutput(); err != nil {
			t.Fatalf("%s mosquitto_pub as the super user: %v %s", v, err, out)
		}
		if err := sub.Wait(); err != nil || subOut.String() != "devices/"+id+"/cmd go-"+v+"\n" {
			t.Fatalf("%s mosquitto_sub: %v, printed %q", v, err, subOut.String())
		}
		out, err = mos("mosquitto_sub", "-i", id, "-u", deviceUser, "-P", deviceSecret, "-q", "1", "-t", "devices/other/#", "-C", "1", "-W", "5").CombinedOutput()
		if !strings.Contains(string(out), "All subscription requests were denied") {
			t.Fatalf("%s mosquitto_sub devices/other/#: %v %q, want its subscription denied", v, err, out)
		}
		denied++
		body := id + "-up"
		if out, err := mos("mosquitto_pub", "-i", id, "-u", deviceUser, "-P", deviceSecret, "-q", "1", "-t", "devices/"+id+"/status", "-m", body).CombinedOutput(); err != nil {
			t.Fatalf("%s mosquitto_pub in its subtree: %v %s", v, err, out)
		}
		allowed = append(allowed, body)
		// Over TLS with the device user's certificate, no password.
		_, tlsPort, _ := net.SplitHostPort(k.mqttTLS)
		tid := id + "-tls"
		if out, err := exec.Command("mosquitto_pub", "-h", host, "-p", tlsPort, "-V", v, "--cafile", caFile, "--cert", deviceCert, "--key", deviceKey,
			"-i", tid, "-q", "1", "-t", "devices/"+tid+"/status", "-m", tid+"-up").CombinedOutput(); err != nil {
			t.Fatalf("%s mosquitto_pub with a client certificate: %v %s", v, err, out)
		}
		allowed = append(allowed, tid+"-up")
		out, err = mos("mosquitto_pub", "-i", id, "-u", deviceUser, "-P", deviceSecret, "-q", "1", "-t", "devices/other/status", "-m", id+"-stray").CombinedOutput()
		// 5.0: PUBACK 0x87, which mosquitto_pub reports (and exits 0);
		// 3.1.1: acknowledged, dropped.
		if v == "mqttv5" && !strings.Contains(string(out), "Not authorized.\nPub on mqtt:devices/other/status by device") {
			t.Fatalf("%s mosquitto_pub outside its subtree: %v %q, want it not authorized", v, err, out)
		}
		denied++
		stray = append(stray, id+"-stray")
	}

	// The RocketMQ consumer receives what the devices were let publish,
	// the commands to them, and nothing else; the broker stored exactly
	// those MQTT publishes.
	want := len(allowed) + 2 + 1 // and the two mosquitto commands, the RocketMQ command
	got.waitFor(t, "the devices' messages at the RocketMQ consumer", time.Minute, func() bool { return got.distinct() >= want })
	for _, b := range allowed {
		if got.count(b) == 0 {
			t.Errorf("the RocketMQ consumer did not receive %q", b)
		}
	}
	for _, b := range stray {
		if got.count(b) != 0 {
			t.Errorf("a refused publish %q reached the RocketMQ consumer", b)
		}
	}
	if in := k.metric("karman_mqtt_messages_in_total"); in != fmt.Sprint(len(allowed)+2) {
		t.Errorf("karman_mqtt_messages_in_total %s, want %d: the refused publishes were stored", in, len(allowed)+2)
	}

	// Refusals: logged without secrets, counted.
	log := k.stderr.String()
	for _, line := range []string{
		`msg="auth: credentials refused" module=auth user=device protocol=mqtt source=127.0.0.1 reason="bad username or password"`,
		`msg="auth: request denied" module=auth user=device protocol=mqtt action=Sub resource=mqtt:devices/other/# source=127.0.0.1 reason="no policy allows it"`,
	} {
		if !strings.Contains(log, line) {
			t.Errorf("the audit log lacks %s:\n%s", line, log)
		}
	}
	for _, s := range []string{deviceSecret, watcherPW, appSecret, aclRootSecret} {
		if strings.Contains(log, s) {
			t.Errorf("a secret reached the log:\n%s", log)
		}
	}
	if n := k.metric(`karman_auth_refused_total{kind="unauthenticated",protocol="mqtt"}`); n != fmt.Sprint(unauthenticated) {
		t.Errorf("unauthenticated MQTT refusals counted %s, want %d", n, unauthenticated)
	}
	if n := k.metric(`karman_auth_refused_total{kind="denied",protocol="mqtt"}`); n != fmt.Sprint(denied) {
		t.Errorf("denied MQTT requests counted %s, want %d", n, denied)
	}
}
