//go:build !race && unix

package compat

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/broker"
	"github.com/karmanmq/karman/protocol/remoting/wire"
	"github.com/karmanmq/karman/server/console"
)

// The gRPC front-end against the RocketMQ Node.js client: each test runs
// scripts of testdata/node (see lib.js there) and checks what they sent
// and received. Each test has a server of its own, so they run in
// parallel: most of their time is spent waiting on the client's timers
// and on invisible and delay times.

// outMessage is a message a Node producer sends (send.js).
type outMessage struct {
	Body       string            `json:"body"`
	Repeat     int               `json:"repeat,omitempty"`
	Tag        string            `json:"tag,omitempty"`
	Keys       []string          `json:"keys,omitempty"`
	Properties map[string]string `json:"properties,omitempty"`
	Group      string            `json:"group,omitempty"`
	DelayMs    int64             `json:"delayMs,omitempty"`
}

// body returns the body the message is sent with.
func (m outMessage) body() string {
	if m.Repeat > 1 {
		return strings.Repeat(m.Body, m.Repeat)
	}
	return m.Body
}

// sentMessage is send.js's receipt for one message.
type sentMessage struct {
	Body      string `json:"body"`
	ID        string `json:"id"`
	Offset    int64  `json:"offset"`
	DeliverAt int64  `json:"deliverAt"`
}

// nodeMessage is a message as a Node consumer received it (view in
// lib.js).
type nodeMessage struct {
	ID         string            `json:"id"`
	Topic      string            `json:"topic"`
	Body       string            `json:"body"`
	Tag        string            `json:"tag"`
	Keys       []string          `json:"keys"`
	Group      string            `json:"group"`
	Properties map[string]string `json:"properties"`
	Attempt    int               `json:"attempt"`
	Corrupted  bool              `json:"corrupted"`
	BornAt     int64             `json:"bornAt"`
	DeliverAt  int64             `json:"deliverAt"`
	ReceivedAt int64             `json:"receivedAt"`
	Consumer   int               `json:"consumer"` // which of push.js's consumers
	DoneAt     int64             `json:"doneAt"`   // when push.js's listener returned
}

func (m nodeMessage) String() string {
	b := m.Body
	if len(b) > 40 {
		b = b[:40] + "..."
	}
	return fmt.Sprintf("%s{id %s tag %q keys %q group %q props %v attempt %d corrupted %v}", b, m.ID, m.Tag, m.Keys, m.Group, m.Properties, m.Attempt, m.Corrupted)
}

// createTypedTopic creates a topic that takes one message type (NORMAL,
// FIFO, DELAY or TRANSACTION).
func (k *karman) createTypedTopic(topic string, queues int32, typ string) {
	k.t.Helper()
	k.createTopic(topic, queues, wire.TopicAttribute{Key: "message.type", Value: typ})
}

// nodeSend sends msgs in order with a Node producer.
func (k *karman) nodeSend(topic string, msgs []outMessage) []sentMessage {
	k.t.Helper()
	var res struct {
		Sent []sentMessage `json:"sent"`
	}
	k.node("send", map[string]any{"topic": topic, "messages": msgs}, &res)
	if len(res.Sent) != len(msgs) {
		k.t.Fatalf("send.js sent %d messages, want %d", len(res.Sent), len(msgs))
	}
	return res.Sent
}

// nodeReceive receives with a Node simple consumer (simple.js) until the
// condition in params holds, and returns every delivery.
func (k *karman) nodeReceive(params map[string]any) []nodeMessage {
	k.t.Helper()
	var res struct {
		Received []nodeMessage `json:"received"`
	}
	k.node("simple", params, &res)
	return res.Received
}

// checkDelivered fails the test unless got holds every message of want
// exactly once, each as it was sent: id, tag, keys and properties intact,
// on its first delivery attempt, with a correct body digest.
func checkDelivered(t *testing.T, topic string, want []outMessage, sent []sentMessage, got []nodeMessage) {
	t.Helper()
	byBody := map[string][]nodeMessage{}
	for _, m := range got {
		byBody[m.Body] = append(byBody[m.Body], m)
	}
	for i, w := range want {
		ms := byBody[w.body()]
		if len(ms) != 1 {
			t.Errorf("%.40s delivered %d times, want once", w.body(), len(ms))
			continue
		}
		m := ms[0]
		if m.ID != sent[i].ID || m.Topic != topic || m.Tag != w.Tag || !slices.Equal(m.Keys, w.Keys) ||
			!maps.Equal(m.Properties, w.Properties) || m.Group != w.Group || m.Attempt != 1 || m.Corrupted || m.BornAt == 0 {
			t.Errorf("sent %.40s as id %s tag %q keys %q group %q properties %v;\nreceived %v on %s", w.body(), sent[i].ID, w.Tag, w.Keys, w.Group, w.Properties, m, m.Topic)
		}
		delete(byBody, w.body())
	}
	for body := range byBody {
		t.Errorf("received %.40s, which was never sent", body)
	}
}

// TestGRPCProducer: a Node producer's messages, with tags, keys and
// properties, reach a Node simple consumer intact.
func TestGRPCProducer(t *testing.T) {
	t.Parallel()
	testGRPCProducer(t, startKarman(t))
}

// TestGRPCOverTLS runs the producer test with the Node.js clients on
// TLS (RocketMQ 5 clients use TLS by default), served on the same port
// as plaintext, with a certificate given by --grpc-tls-cert and
// --grpc-tls-key that the clients are told to trust.
func TestGRPCOverTLS(t *testing.T) {
	t.Parallel()
	certFile, keyFile := writeTestCertificate(t)
	k := startKarman(t, "--grpc-tls-cert", certFile, "--grpc-tls-key", keyFile)
	k.nodeTLS = certFile
	testGRPCProducer(t, k)
}

// TestGRPCNamespace: Node clients configured with a namespace send and
// receive on their topic by its own name, while the broker stores it
// under the namespace, as RocketMQ's proxy does ("tenant%GrpcNamespaced"),
// where remoting clients of that namespace find it.
func TestGRPCNamespace(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	k.nodeNamespace = "tenant"
	const topic, group = "GrpcNamespaced", "grpc-namespaced"
	k.createTypedTopic("tenant%"+topic, 2, "NORMAL")
	var out []outMessage
	for i := range 8 {
		out = append(out, outMessage{Body: "namespaced-" + strconv.Itoa(i), Tag: "ns", Keys: []string{"ns-key"}})
	}
	sent := k.nodeSend(topic, out)
	got := k.nodeReceive(map[string]any{"topic": topic, "group": group, "count": len(out)})
	checkDelivered(t, topic, out, sent, got) // named without the namespace

	resp := k.invoke(wire.QueryMessage, &wire.QueryMessageRequestHeader{Topic: "tenant%" + topic, Key: "ns-key", MaxNum: 64,
		EndTimestamp: time.Now().UnixMilli() + 1000}, nil)
	if resp.ResponseCode() != wire.Success || bytes.Count(resp.Body, []byte("namespaced-")) != len(out) {
		t.Errorf("query of tenant%%%s by key: %s %s, %d messages", topic, resp.ResponseCode(), resp.Remark, bytes.Count(resp.Body, []byte("namespaced-")))
	}
	if r := k.invoke(wire.QueryMessage, &wire.QueryMessageRequestHeader{Topic: topic, Key: "ns-key", MaxNum: 64,
		EndTimestamp: time.Now().UnixMilli() + 1000}, nil); bytes.Contains(r.Body, []byte("namespaced-")) {
		t.Errorf("messages of the namespace are in %s, outside it", topic)
	}
}

// writeTestCertificate writes a self-signed certificate for 127.0.0.1 and
// localhost, and its key, as PEM files.
func writeTestCertificate(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "karman compat test"},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func testGRPCProducer(t *testing.T, k *karman) {
	const topic, group = "GrpcNormal", "grpc-normal"
	k.createTypedTopic(topic, 4, "NORMAL")
	var out []outMessage
	for i := range 24 {
		out = append(out, outMessage{
			Body:       "normal-" + strconv.Itoa(i),
			Tag:        []string{"TagA", "TagB", "TagC"}[i%3],
			Keys:       []string{"key-" + strconv.Itoa(i), "shared"},
			Properties: map[string]string{"index": strconv.Itoa(i), "region": "eu"},
		})
	}
	out = append(out,
		outMessage{Body: "bare"},                                   // no tag, keys or properties
		outMessage{Body: "large-", Repeat: 40 << 10, Tag: "large"}, // 240 KiB
		outMessage{Body: "unicode-订单-✓", Tag: "标签", Keys: []string{"键-1"},
			Properties: map[string]string{"note": "värde ✓ 值", "empty": ""}},
	)
	sent := k.nodeSend(topic, out)
	got := k.nodeReceive(map[string]any{"topic": topic, "group": group, "count": len(out)})
	checkDelivered(t, topic, out, sent, got)

	// The keys are indexed for look-ups over the other protocol.
	resp := k.invoke(wire.QueryMessage, &wire.QueryMessageRequestHeader{Topic: topic, Key: "shared", MaxNum: 64,
		EndTimestamp: time.Now().UnixMilli() + 1000}, nil)
	if resp.ResponseCode() != wire.Success || bytes.Count(resp.Body, []byte("normal-")) != 24 {
		t.Errorf("query by key: %s %s, %d messages", resp.ResponseCode(), resp.Remark, bytes.Count(resp.Body, []byte("normal-")))
	}
}

// shortRetries is a retry policy of 50 ms back-offs, so that redeliveries
// after a failure keep the tests fast.
var shortRetries = &broker.GroupRetryPolicy{Type: broker.RetryPolicyCustomized,
	CustomizedRetryPolicy: &broker.CustomizedRetryPolicy{Next: []int64{50, 50, 50}}}

// deliveriesOf groups deliveries by body, keeping their order.
func deliveriesOf(ms []nodeMessage) map[string][]nodeMessage {
	out := map[string][]nodeMessage{}
	for _, m := range ms {
		out[m.Body] = append(out[m.Body], m)
	}
	return out
}

func attemptsOf(ms []nodeMessage) []int {
	var out []int
	for _, m := range ms {
		out = append(out, m.Attempt)
	}
	return out
}

// checkDeadLetter fails the test unless the group's dead-letter topic
// holds exactly the message of id with body, from topic.
func checkDeadLetter(t *testing.T, k *karman, group, topic, body, id string) {
	t.Helper()
	dead := k.drainQueue(message.DLQTopic(group), 1)
	m := dead[0]
	if string(m.Body) != body || m.UniqKey() != id || m.Properties[message.PropertyDLQOriginTopic] != topic {
		t.Errorf("%s holds %q (id %s, from %s), want %q (id %s, from %s)", message.DLQTopic(group),
			m.Body, m.UniqKey(), m.Properties[message.PropertyDLQOriginTopic], body, id, topic)
	}
	if len(dead) != 1 {
		t.Errorf("%s holds %d messages, want 1", message.DLQTopic(group), len(dead))
	}
}

// TestGRPCSimpleConsumer: receive, ack, changeInvisibleDuration (shorter
// and longer), redelivery once the invisible time passed with a growing
// delivery attempt, and the dead-letter topic after max attempts.
func TestGRPCSimpleConsumer(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, group = "GrpcLifecycle", "grpc-lifecycle"
	// A receive asks for at least 10 s (RocketMQ's proxy minimum); a change
	// of invisible time for at least 1 s (shorter ones are raised to it).
	const invisible, change, maxAttempts = 10000, 1000, 3
	k.createTypedTopic(topic, 1, "NORMAL")
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, RetryMaxTimes: maxAttempts - 1})
	type delivery struct {
		nodeMessage
		LeaseFrom int64 `json:"leaseFrom"` // the last lease began no earlier
		LeaseMs   int64 `json:"leaseMs"`
	}
	var res struct {
		Sent       []sentMessage `json:"sent"`
		Deliveries []delivery    `json:"deliveries"`
		StaleAck   string        `json:"staleAck"`
		ExtendAck  string        `json:"extendAck"`
	}
	k.node("lifecycle", map[string]any{"topic": topic, "group": group, "invisibleMs": invisible,
		"changeMs": change, "extendMs": invisible + 3000, "maxAttempts": maxAttempts}, &res)
	ids := map[string]string{}
	for _, s := range res.Sent {
		ids[s.Body] = s.ID
	}
	got := map[string][]delivery{}
	for _, d := range res.Deliveries {
		got[d.Body] = append(got[d.Body], d)
		if d.ID != ids[d.Body] || d.Tag != "lifecycle" || d.Corrupted {
			t.Errorf("%s (id %s) delivered as %v", d.Body, ids[d.Body], d.nodeMessage)
		}
	}
	// redelivered checks that body was delivered with attempts 1 to n, each
	// after the lease of the one before (of lease ms) ended.
	redelivered := func(body, what string, n int, lease int64) {
		t.Helper()
		ms := got[body]
		var attempts []int
		for _, m := range ms {
			attempts = append(attempts, m.Attempt)
		}
		want := make([]int, n)
		for i := range want {
			want[i] = i + 1
		}
		if !slices.Equal(attempts, want) {
			t.Errorf("%s delivered with attempts %v, want %v", what, attempts, want)
			return
		}
		for i := 1; i < len(ms); i++ {
			prev := ms[i-1]
			if prev.LeaseMs != lease {
				t.Errorf("%s: lease of attempt %d was %d ms, want %d", what, prev.Attempt, prev.LeaseMs, lease)
			}
			if early := prev.LeaseFrom + prev.LeaseMs - ms[i].ReceivedAt; early > 0 {
				t.Errorf("%s: attempt %d came %d ms before the %d ms lease of attempt %d ended", what, ms[i].Attempt, early, prev.LeaseMs, prev.Attempt)
			}
		}
	}
	redelivered("ack-me", "the acknowledged message", 1, 0)
	redelivered("change-me", "the message whose invisible time was cut", 2, change)
	// A stale handle may be refused or acknowledge nothing; it must not
	// acknowledge the new lease, which the redelivery of change-me shows.
	if res.StaleAck != "ok" && !strings.Contains(res.StaleAck, "response-code=40013") { // INVALID_RECEIPT_HANDLE
		t.Errorf("ack with the receipt handle ChangeInvisibleDuration replaced: %s", res.StaleAck)
	}
	redelivered("lapse-me", "the message left alone", 2, invisible)
	redelivered("extend-me", "the message whose invisible time was extended", 1, 0)
	if res.ExtendAck != "ok" {
		t.Errorf("ack with the handle ChangeInvisibleDuration returned: %s", res.ExtendAck)
	}
	redelivered("expire-me", "the message never acknowledged", maxAttempts, change)
	checkDeadLetter(t, k, group, topic, "expire-me", ids["expire-me"])
}

// logShares logs how many deliveries each of push.js's consumers had.
func logShares(t *testing.T, ds []nodeMessage) {
	shares := map[int]int{}
	for _, d := range ds {
		shares[d.Consumer]++
	}
	t.Logf("deliveries per consumer: %v", shares)
}

// TestGRPCPushConsumer: two concurrent push consumers of a group get every
// message once between them; one a listener fails comes back with the
// next delivery attempt.
func TestGRPCPushConsumer(t *testing.T) {
	t.Parallel()
	testGRPCPushConsumer(t, startKarman(t))
}

func testGRPCPushConsumer(t *testing.T, k *karman) {
	const topic, group, n = "GrpcPush", "grpc-push", 40
	k.createTypedTopic(topic, 4, "NORMAL")
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, RetryMaxTimes: 16, GroupRetryPolicy: shortRetries})
	var out []outMessage
	for i := range n {
		out = append(out, outMessage{Body: "push-" + strconv.Itoa(i), Tag: "push", Keys: []string{"push-key-" + strconv.Itoa(i)}})
	}
	out = append(out, outMessage{Body: "fail-once", Tag: "push"})
	sent := k.nodeSend(topic, out)
	var res struct {
		Deliveries []nodeMessage `json:"deliveries"`
	}
	k.node("push", map[string]any{"topic": topic, "group": group, "consumers": 2, "count": len(out), "failOnce": []string{"fail-once"}}, &res)
	logShares(t, res.Deliveries)
	got := deliveriesOf(res.Deliveries)
	for i, m := range out {
		ds := got[m.Body]
		want := []int{1}
		if m.Body == "fail-once" {
			want = []int{1, 2}
		}
		if a := attemptsOf(ds); !slices.Equal(a, want) {
			t.Errorf("%s delivered with attempts %v, want %v", m.Body, a, want)
			continue
		}
		checkNackDelay(t, ds)
		for _, d := range ds {
			if d.ID != sent[i].ID || d.Tag != m.Tag || !slices.Equal(d.Keys, m.Keys) || d.Corrupted {
				t.Errorf("%s (id %s) delivered as %v", m.Body, sent[i].ID, d)
			}
		}
	}
	if len(got) != len(out) {
		t.Errorf("%d distinct messages delivered, want %d", len(got), len(out))
	}
}

// TestGRPCPushDeadLetter: a message a concurrent push consumer's listener
// always fails is redelivered up to the group's max attempts, then moved
// to the dead-letter topic by the server and delivered no more.
func TestGRPCPushDeadLetter(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, group, maxAttempts = "GrpcPushDead", "grpc-push-dead", 2
	k.createTypedTopic(topic, 2, "NORMAL")
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, RetryMaxTimes: maxAttempts - 1, GroupRetryPolicy: shortRetries})
	// The failing message is alone: no other ack or arrival wakes the
	// consumers' long polls.
	sent := k.nodeSend(topic, []outMessage{{Body: "hopeless", Keys: []string{"hopeless-key"}}})
	var res struct {
		Deliveries []nodeMessage `json:"deliveries"`
	}
	// The listener takes 300 ms, so the consumer's next receive is
	// already waiting when the nack comes. A nack keeps the message
	// invisible for at least 1 s (the server raises the client's ~0 ms to
	// that); the consumer goes on receiving for 3 s more, in which the
	// server must find it over its attempts.
	k.node("push", map[string]any{"topic": topic, "group": group, "poison": []string{"hopeless"},
		"poisonAttempts": maxAttempts, "holdMs": 300, "lingerMs": 3000}, &res)
	got := deliveriesOf(res.Deliveries)
	if len(got) != 1 {
		t.Errorf("deliveries of %d messages, want 1", len(got))
	}
	if a := attemptsOf(got["hopeless"]); !slices.Equal(a, []int{1, 2}) {
		t.Errorf("the failing message was delivered with attempts %v, want [1 2]", a)
	} else {
		checkNackDelay(t, got["hopeless"])
	}
	if n := k.storedWithin(message.DLQTopic(group), 2*time.Second); n != 1 {
		t.Fatalf("%s held %d messages 3 s after the last nack of the failing message, while the consumers were receiving; want 1",
			message.DLQTopic(group), n)
	}
	checkDeadLetter(t, k, group, topic, "hopeless", sent[0].ID)
	checkPopHistory(t, k, group, topic, sent[0].ID)
}

// checkPopHistory fails the test unless the history the API gives of
// message id of topic shows, for group, its two pops by the Node.js
// consumer (attempts 1 and 2), its negative acknowledgement in between,
// and its dead letter after them.
func checkPopHistory(t *testing.T, k *karman, group, topic, id string) {
	t.Helper()
	resp, err := http.Get("http://" + k.http + "/api/v1/messages/" + url.PathEscape(id) + "/history?topic=" + url.QueryEscape(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h console.History
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, e := range h.Events {
		if e.Group != group {
			continue
		}
		switch e.Kind {
		case "pop":
			if !strings.HasPrefix(e.Client, "grpc ") {
				t.Errorf("pop without its gRPC consumer: %+v", e)
			}
			seen = append(seen, fmt.Sprintf("pop %d", e.Attempt))
		case "invisible", "dead-letter":
			seen = append(seen, e.Kind)
		}
	}
	// The consumer may nack the last attempt before the server
	// dead-letters it: the invisible changes after the second pop are
	// left out.
	got := strings.Join(seen, ", ")
	if want := "pop 1, invisible, pop 2"; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "dead-letter") {
		t.Errorf("history of %s for %s: %s; want %s, then its dead letter\n%+v", id, group, got, want, h.Events)
	}
}

// maxNackDelay bounds how long a message a push consumer's listener failed
// takes to come back: the client asks for its retry policy's delay (a few
// ms), which the server raises to 1 s.
const maxNackDelay = 3 * time.Second

// checkNackDelay fails the test unless each delivery of ds but the first
// came within maxNackDelay of the listener failing the one before.
func checkNackDelay(t *testing.T, ds []nodeMessage) {
	t.Helper()
	for i := 1; i < len(ds); i++ {
		if d := time.Duration(ds[i].ReceivedAt-ds[i-1].DoneAt) * time.Millisecond; d > maxNackDelay {
			t.Errorf("%s: attempt %d came %s after the listener failed attempt %d, want within %s",
				ds[i].Body, ds[i].Attempt, d, ds[i-1].Attempt, maxNackDelay)
		}
	}
}

// storedWithin returns how many messages queue 0 of topic holds, waiting
// up to d for the first one to be indexed.
func (k *karman) storedWithin(topic string, d time.Duration) int64 {
	k.t.Helper()
	deadline := time.Now().Add(d)
	for {
		resp := k.invoke(wire.GetMaxOffset, &wire.GetMaxOffsetRequestHeader{Topic: topic, Committed: true}, nil)
		var n int64
		if resp.ResponseCode() == wire.Success {
			n, _ = strconv.ParseInt(resp.ExtFields["offset"], 10, 64)
		}
		if n > 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestGRPCFIFO: FIFO messages of several message groups reach two FIFO
// push consumers of a group in send order per group, one message of a
// group at a time across both; a message a listener always fails
// is retried by the client up to the group's max attempts, then forwarded
// to the dead-letter topic, and its group goes on after it.
func TestGRPCFIFO(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, group, perGroup, maxAttempts = "GrpcFifo", "grpc-fifo", 8, 3
	k.createTypedTopic(topic, 4, "FIFO")
	k.createGroup(broker.SubscriptionGroupConfig{GroupName: group, ConsumeEnable: true, ConsumeMessageOrderly: true,
		RetryMaxTimes: maxAttempts - 1, GroupRetryPolicy: shortRetries})
	groups := []string{"order-a", "order-b", "order-c", "order-d"}
	var out []outMessage
	for i := range perGroup {
		for _, g := range groups {
			out = append(out, outMessage{Body: g + "-" + strconv.Itoa(i), Group: g, Tag: "fifo"})
		}
	}
	const poisoned = "order-p"
	out = append(out,
		outMessage{Body: poisoned + "-0", Group: poisoned, Tag: "fifo"},
		outMessage{Body: "poison", Group: poisoned, Tag: "fifo"},
		outMessage{Body: poisoned + "-2", Group: poisoned, Tag: "fifo"},
	)
	sent := k.nodeSend(topic, out)
	var res struct {
		Deliveries []nodeMessage `json:"deliveries"`
	}
	k.node("push", map[string]any{"topic": topic, "group": group, "consumers": 2, "count": len(out) - 1,
		"poison": []string{"poison"}, "poisonAttempts": maxAttempts, "holdMs": 20}, &res)
	logShares(t, res.Deliveries)

	// No message of a group is handed out while its predecessor is still
	// being consumed, by either consumer.
	byGroup := map[string][]nodeMessage{}
	for _, d := range res.Deliveries {
		byGroup[d.Group] = append(byGroup[d.Group], d)
	}
	for g, ds := range byGroup {
		slices.SortFunc(ds, func(a, b nodeMessage) int { return int(a.ReceivedAt - b.ReceivedAt) })
		for i := 1; i < len(ds); i++ {
			if ds[i].ReceivedAt < ds[i-1].DoneAt {
				t.Errorf("message group %s: %s (consumer %d) was consumed from %d, before %s (consumer %d) was done at %d",
					g, ds[i].Body, ds[i].Consumer, ds[i].ReceivedAt, ds[i-1].Body, ds[i-1].Consumer, ds[i-1].DoneAt)
			}
		}
	}

	// Per message group: the deliveries, with each message's repeated
	// deliveries collapsed, are the send order, and each message but the
	// poison is consumed exactly once.
	wantOrder := map[string][]string{}
	for _, m := range out {
		wantOrder[m.Group] = append(wantOrder[m.Group], m.Body)
	}
	gotOrder := map[string][]string{}
	for _, d := range res.Deliveries {
		seq := gotOrder[d.Group]
		if len(seq) == 0 || seq[len(seq)-1] != d.Body {
			gotOrder[d.Group] = append(seq, d.Body)
		}
	}
	for g, want := range wantOrder {
		if !slices.Equal(gotOrder[g], want) {
			t.Errorf("message group %s consumed in order %v, want %v", g, gotOrder[g], want)
		}
	}
	got := deliveriesOf(res.Deliveries)
	for i, m := range out {
		want := []int{1}
		if m.Body == "poison" {
			want = []int{1, 2, 3}
		}
		if a := attemptsOf(got[m.Body]); !slices.Equal(a, want) {
			t.Errorf("%s delivered with attempts %v, want %v", m.Body, a, want)
		}
		for _, d := range got[m.Body] {
			if d.ID != sent[i].ID || d.Group != m.Group || d.Corrupted {
				t.Errorf("%s (id %s, group %s) delivered as %v", m.Body, sent[i].ID, m.Group, d)
			}
		}
	}
	checkDeadLetter(t, k, group, topic, "poison", sent[len(sent)-2].ID)

	// The messages of a group share one queue, in send order.
	type place struct{ queue, index int }
	placed := map[string]place{}
	for q := range 4 {
		for i, m := range k.queueMessages(topic, int32(q)) {
			placed[string(m.Body)] = place{q, i}
		}
	}
	for g, bodies := range wantOrder {
		for i, b := range bodies[1:] {
			prev, p := placed[bodies[i]], placed[b]
			if p.queue != prev.queue || p.index <= prev.index {
				t.Errorf("message group %s: %s stored at %v, %s at %v", g, bodies[i], prev, b, p)
			}
		}
	}
}

// queueMessages returns the messages stored in one queue of topic.
func (k *karman) queueMessages(topic string, queue int32) []*message.Message {
	k.t.Helper()
	var out []*message.Message
	for offset := int64(0); ; {
		resp := k.invoke(wire.PullMessage, &wire.PullMessageRequestHeader{
			ConsumerGroup: "compat-inspector", Topic: topic, QueueID: queue, QueueOffset: offset, MaxMsgNums: 32,
			SysFlag: wire.PullFlagSubscription, Subscription: "*", ExpressionType: wire.ExpressionTag,
		}, nil)
		switch resp.ResponseCode() {
		case wire.Success:
		case wire.PullNotFound, wire.PullOffsetMoved:
			return out
		default:
			k.t.Fatalf("pull %s/%d: %s %s", topic, queue, resp.ResponseCode(), resp.Remark)
		}
		for body := resp.Body; len(body) > 0; {
			m, size, err := message.DecodeStored(body)
			if err != nil {
				k.t.Fatal(err)
			}
			out = append(out, m)
			body = body[size:]
		}
		next, err := strconv.ParseInt(resp.ExtFields["nextBeginOffset"], 10, 64)
		if err != nil || next <= offset {
			k.t.Fatalf("pull %s/%d: next offset %q after %d", topic, queue, resp.ExtFields["nextBeginOffset"], offset)
		}
		offset = next
	}
}

// TestGRPCDelay: delayed messages arrive no earlier than their delivery
// time (and not much later); a recalled one never arrives.
func TestGRPCDelay(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, group = "GrpcDelay", "grpc-delay"
	k.createTypedTopic(topic, 1, "DELAY")
	var res struct {
		Sent     []sentMessage `json:"sent"`
		Recall   string        `json:"recall"`
		Received []nodeMessage `json:"received"`
	}
	k.node("delay", map[string]any{"topic": topic, "group": group, "delays": []int{1000, 2500}, "recallMs": 1500}, &res)
	got := deliveriesOf(res.Received)
	for _, s := range res.Sent {
		ms := got[s.Body]
		if s.Body == "recall-me" {
			if len(ms) != 0 {
				t.Errorf("the recalled message was delivered %d times", len(ms))
			}
			continue
		}
		if len(ms) != 1 {
			t.Errorf("%s delivered %d times, want once", s.Body, len(ms))
			continue
		}
		m := ms[0]
		if m.ID != s.ID || m.DeliverAt != s.DeliverAt || m.Corrupted {
			t.Errorf("%s (id %s, delivery time %d) received as %v, delivery time %d", s.Body, s.ID, s.DeliverAt, m, m.DeliverAt)
		}
		if early := s.DeliverAt - m.ReceivedAt; early > 0 {
			t.Errorf("%s arrived %d ms before its delivery time", s.Body, early)
		}
		if late := m.ReceivedAt - s.DeliverAt; late > 3000 {
			t.Errorf("%s arrived %d ms after its delivery time", s.Body, late)
		}
	}
	if res.Recall != "ok" {
		t.Errorf("recall: %s", res.Recall)
	}
}

// TestGRPCTransactions: commit and rollback, and orphaned transactions
// the producer leaves open until the server's checks resolve them.
func TestGRPCTransactions(t *testing.T) {
	t.Parallel()
	// The first check comes a second after the send, long after the
	// transactions ended at once were ended, then every half second.
	k := startKarman(t, "--transaction-timeout", "1s", "--transaction-check-interval", "500ms")
	const topic, group = "GrpcTransactions", "grpc-transactions"
	k.createTypedTopic(topic, 1, "TRANSACTION")
	var res struct {
		Sent   []sentMessage `json:"sent"`
		Checks []struct {
			nodeMessage
			Answer string `json:"answer"`
		} `json:"checks"`
		Ends []struct {
			ID         string `json:"id"`
			Resolution string `json:"resolution"`
			Source     string `json:"source"`
		} `json:"ends"`
		Received []nodeMessage `json:"received"`
	}
	k.node("transaction", map[string]any{"topic": topic, "group": group}, &res)
	byID := map[string]string{}
	for _, s := range res.Sent {
		byID[s.ID] = s.Body
	}

	// What the consumer got: the committed messages, once each, intact.
	got := deliveriesOf(res.Received)
	for _, s := range res.Sent {
		want := 0
		if s.Body == "commit" || s.Body == "orphan-commit" || s.Body == "last" {
			want = 1
		}
		if len(got[s.Body]) != want {
			t.Errorf("%s delivered %d times, want %d", s.Body, len(got[s.Body]), want)
			continue
		}
		for _, m := range got[s.Body] {
			if m.ID != s.ID || m.Tag != "txn" || !slices.Equal(m.Keys, []string{"key-" + s.Body}) ||
				!maps.Equal(m.Properties, map[string]string{"kind": s.Body}) || m.Corrupted {
				t.Errorf("%s (id %s) delivered as %v", s.Body, s.ID, m)
			}
		}
	}

	// The checks: only the orphans, carrying the half message; first
	// unanswered, then resolved.
	answers := map[string][]string{}
	for _, c := range res.Checks {
		answers[c.Body] = append(answers[c.Body], c.Answer)
		if byID[c.ID] != c.Body || c.Tag != "txn" || !slices.Equal(c.Keys, []string{"key-" + c.Body}) ||
			!maps.Equal(c.Properties, map[string]string{"kind": c.Body}) || c.Corrupted {
			t.Errorf("check for %s carried %v", byID[c.ID], c.nodeMessage)
		}
	}
	for body, resolution := range map[string]string{"orphan-commit": "COMMIT", "orphan-rollback": "ROLLBACK"} {
		a := answers[body]
		if len(a) < 2 || a[0] != "TRANSACTION_RESOLUTION_UNSPECIFIED" || a[len(a)-1] != resolution {
			t.Errorf("%s checked with answers %v, want no answer then %s", body, a, resolution)
		}
		delete(answers, body)
	}
	if len(answers) != 0 {
		t.Errorf("transactions that were ended at once were checked: %v", answers)
	}

	// The EndTransaction calls the client made, from itself and from checks.
	ends := map[string]string{}
	for _, e := range res.Ends {
		ends[byID[e.ID]] += e.Resolution + "/" + e.Source + " "
	}
	wantEnds := map[string]string{
		"commit": "COMMIT/SOURCE_CLIENT ", "rollback": "ROLLBACK/SOURCE_CLIENT ", "last": "COMMIT/SOURCE_CLIENT ",
		"orphan-commit": "COMMIT/SOURCE_SERVER_CHECK ", "orphan-rollback": "ROLLBACK/SOURCE_SERVER_CHECK ",
	}
	if !maps.Equal(ends, wantEnds) {
		t.Errorf("transactions ended as %v, want %v", ends, wantEnds)
	}
}

// TestGRPCFilters: a tag and a SQL92 subscription each receive exactly
// their subset of a topic's messages; a subscription with an invalid SQL92
// expression is refused.
func TestGRPCFilters(t *testing.T) {
	t.Parallel()
	k := startKarman(t)
	const topic, n = "GrpcFilters", 300
	k.createTypedTopic(topic, 1, "NORMAL")
	tags := []string{"red", "green", "blue", "white"}
	regions := []string{"eu", "us", "ap"}
	const sql = "(price >= 90 AND region IN ('eu', 'ap') AND TAGS <> 'blue') OR flagged = 'true'"
	wantTag, wantSQL := map[string]bool{}, map[string]bool{}
	var out []outMessage
	for i := range n {
		tag, price, region := tags[i%4], i%100, regions[i%3]
		m := outMessage{Body: "m-" + strconv.Itoa(i), Tag: tag,
			Properties: map[string]string{"price": strconv.Itoa(price), "region": region}}
		if i%97 == 0 {
			m.Properties["flagged"] = "true"
		}
		if tag == "red" || tag == "white" {
			wantTag[m.Body] = true
		}
		if price >= 90 && region != "us" && tag != "blue" || i%97 == 0 {
			wantSQL[m.Body] = true
		}
		out = append(out, m)
	}
	// The last message matches both; the topic has one queue, so once it
	// arrived every earlier message was delivered or filtered out.
	out = append(out, outMessage{Body: "last", Tag: "red", Properties: map[string]string{"flagged": "true"}})
	wantTag["last"], wantSQL["last"] = true, true
	k.nodeSend(topic, out)

	// A subscription whose expression does not parse is refused when the
	// consumer starts, and disturbs nothing.
	refused := k.startNode("refused", map[string]any{"topic": topic, "group": "grpc-filter-bad", "expression": "price >>> 1 AND", "sql": true})
	byTag := k.startNode("simple", map[string]any{"topic": topic, "group": "grpc-filter-tag", "expression": "red || white", "until": "last"})
	bySQL := k.startNode("simple", map[string]any{"topic": topic, "group": "grpc-filter-sql", "expression": sql, "sql": true, "until": "last"})
	for name, c := range map[string]struct {
		script *nodeScript
		want   map[string]bool
	}{"tag": {byTag, wantTag}, "SQL92": {bySQL, wantSQL}} {
		var res struct {
			Received []nodeMessage `json:"received"`
		}
		c.script.wait(&res)
		got := deliveriesOf(res.Received)
		for body, ms := range got {
			if !c.want[body] {
				t.Errorf("%s subscription received %s, which does not match", name, body)
			} else if len(ms) != 1 {
				t.Errorf("%s subscription received %s %d times", name, body, len(ms))
			}
		}
		for body := range c.want {
			if len(got[body]) == 0 {
				t.Errorf("%s subscription missed %s", name, body)
			}
		}
	}
	var bad struct {
		Started bool   `json:"started"`
		Error   string `json:"error"`
	}
	refused.wait(&bad)
	if bad.Started || !strings.Contains(bad.Error, "response-code=40010") { // ILLEGAL_FILTER_EXPRESSION
		t.Errorf("a consumer subscribing with an invalid SQL92 expression started: %v, error: %s", bad.Started, bad.Error)
	}
}

// TestGRPCBinary: the producer and push consumer scenarios against the
// karman binary, which then stops cleanly (and, built with the race
// detector, reports no race).
func TestGRPCBinary(t *testing.T) {
	t.Parallel()
	k := startBinary(t)
	testGRPCProducer(t, k.karman)
	testGRPCPushConsumer(t, k.karman)
	k.stop()
}
