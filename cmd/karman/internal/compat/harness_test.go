//go:build !race && unix

package compat

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/broker"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/remotingtest"
	"github.com/karmanmq/karman/protocol/remoting/wire"
	"github.com/karmanmq/karman/server"
	_ "github.com/karmanmq/karman/server/modules/standard"
)

// offsetDirEnv is where the Go client keeps the offsets of broadcasting
// consumers. The client reads it once, when its package initialises, so
// TestMain sets it and runs the tests in a fresh process.
const offsetDirEnv = "rocketmq.client.localOffsetStoreDir"

func TestMain(m *testing.M) {
	if os.Getenv(offsetDirEnv) == "" {
		dir, err := os.MkdirTemp("", "karman-compat-offsets-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		exe, err := os.Executable()
		if err == nil {
			err = syscall.Exec(exe, os.Args, append(os.Environ(), offsetDirEnv+"="+dir))
		}
		fmt.Fprintln(os.Stderr, "re-run with a private offset directory:", err)
		os.Exit(1)
	}
	rlog.SetLogLevel("error") // the client logs every route refresh at info
	if l := os.Getenv("COMPAT_CLIENT_LOG"); l != "" {
		rlog.SetLogLevel(l)
	}
	code := m.Run()
	os.RemoveAll(os.Getenv(offsetDirEnv))
	removeBuiltBinary()
	os.Exit(code)
}

// karman is one "karman serve" (in-process, or the binary): name server,
// broker and gRPC endpoint on loopback ports chosen at run time.
type karman struct {
	t       *testing.T
	namesrv string // name server address
	broker  string // broker address
	grpc    string // gRPC endpoint address
	mqtt    string // MQTT over TCP
	mqttWS  string // MQTT over WebSocket (path /mqtt)
	mqttTLS string // MQTT over TLS
	http    string // HTTP address (/healthz, /metrics)
	admin   *peer.Peer
	// nodeTLS, when set, makes the Node.js clients use TLS and trust the
	// certificate in this PEM file.
	nodeTLS string
	// nodeNamespace, when set, is the namespace of the Node.js clients.
	nodeNamespace string
}

// readAnnouncements reads serve's start-up lines up to "karman: ready" and
// records the addresses it announced. It reports whether every address
// the tests use was announced.
func (k *karman) readAnnouncements(r io.Reader) bool {
	lines := bufio.NewScanner(r)
	for lines.Scan() {
		line := lines.Text()
		if a, ok := strings.CutPrefix(line, "karman: namesrv listening on "); ok {
			k.namesrv = a
		}
		if a, ok := strings.CutPrefix(line, "karman: broker listening on "); ok {
			k.broker = a
		}
		if a, ok := strings.CutPrefix(line, "karman: grpc listening on "); ok {
			k.grpc = a
		}
		if a, ok := strings.CutPrefix(line, "karman: http listening on "); ok {
			k.http = a
		}
		if a, ok := strings.CutPrefix(line, "karman: mqtt listening on "); ok {
			k.mqtt = a
		}
		if a, ok := strings.CutPrefix(line, "karman: mqtt-ws listening on "); ok {
			k.mqttWS = a
		}
		if a, ok := strings.CutPrefix(line, "karman: mqtt-tls listening on "); ok {
			k.mqttTLS = a
		}
		if line == "karman: ready" {
			break
		}
	}
	return k.namesrv != "" && k.broker != "" && k.grpc != ""
}

// listenArgs are the serve flags that put every listener on a loopback
// port chosen at run time.
var listenArgs = []string{"--http-addr", "127.0.0.1:0", "--namesrv-addr", "127.0.0.1:0",
	"--broker-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0",
	"--mqtt-addr", "127.0.0.1:0", "--mqtt-ws-addr", "127.0.0.1:0", "--mqtt-tls-addr", "127.0.0.1:0"}

// startKarman runs serve with a fresh data directory until the test ends.
func startKarman(t *testing.T, args ...string) *karman {
	t.Helper()
	opts, err := server.NewOptions()
	if err != nil {
		t.Fatal(err)
	}
	fs := opts.Flags
	args = slices.Concat([]string{"--data", t.TempDir(), "--segment-size", "64MiB", "--log-level", "warn"}, listenArgs, args)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	log := testLogger(t)
	go func() {
		opts.Logger, opts.Announce = log, pw
		done <- server.Run(ctx, *opts)
		pw.Close()
	}()
	k := &karman{t: t}
	started := k.readAnnouncements(pr)
	go io.Copy(io.Discard, pr)
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	if !started {
		cancel()
		t.Fatalf("serve did not start: %v", <-done)
	}
	p, err := peer.Dial(context.Background(), k.broker, peer.Options{RequestTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	k.admin = p
	return k
}

// invoke sends a request to the broker with the test's own client.
func (k *karman) invoke(code wire.RequestCode, h wire.Header, body []byte) *wire.Command {
	k.t.Helper()
	req := wire.NewRequest(code, nil)
	if h != nil {
		req.EncodeHeader(h)
	}
	req.Body = body
	resp, err := k.admin.Invoke(context.Background(), req)
	if err != nil {
		k.t.Fatalf("%s: %v", code, err)
	}
	return resp
}

// createTopic creates a topic on the broker and waits until the name
// server routes it (consumers refuse to start on a topic without one).
func (k *karman) createTopic(topic string, queues int32, attrs ...wire.TopicAttribute) {
	k.t.Helper()
	resp := k.invoke(wire.UpdateAndCreateTopic, &wire.CreateTopicRequestHeader{
		Topic: topic, DefaultTopic: "TBW102", ReadQueueNums: queues, WriteQueueNums: queues, Perm: 6,
		TopicFilterType: wire.TopicFilterSingleTag, Attributes: attrs,
	}, nil)
	if resp.ResponseCode() != wire.Success {
		k.t.Fatalf("create topic %s: %s %s", topic, resp.ResponseCode(), resp.Remark)
	}
	k.waitRoute(topic)
}

// createGroup creates a consumer group (and its retry topic) with the
// given retry policy, and waits until its retry topic is routed.
func (k *karman) createGroup(cfg broker.SubscriptionGroupConfig) {
	k.t.Helper()
	body, err := json.Marshal(cfg)
	if err != nil {
		k.t.Fatal(err)
	}
	if resp := k.invoke(wire.UpdateAndCreateSubscriptionGroup, nil, body); resp.ResponseCode() != wire.Success {
		k.t.Fatalf("create group %s: %s %s", cfg.GroupName, resp.ResponseCode(), resp.Remark)
	}
	k.waitRoute(message.RetryTopic(cfg.GroupName))
}

// waitRoute waits until the name server has a route for topic. The
// broker registers asynchronously after a change, and nothing tells the
// test when the name server has it, so this asks every few milliseconds.
func (k *karman) waitRoute(topic string) {
	k.t.Helper()
	remotingtest.WaitRoute(k.t, k.namesrv, topic)
}

// waitNoConsumers waits until the broker has seen every consumer of
// group go. The broker forgets a client once it has served everything the
// client sent before closing its connection (offset commits included).
func (k *karman) waitNoConsumers(group string) {
	k.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp := k.invoke(wire.GetConsumerListByGroup, &wire.GetConsumerListByGroupRequestHeader{ConsumerGroup: group}, nil)
		if resp.ResponseCode() != wire.Success {
			return
		}
		if time.Now().After(deadline) {
			k.t.Fatalf("group %s still has consumers: %s", group, resp.Body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// drainQueue long-polls (topic, queue 0) from offset until it has n
// messages, and returns them.
func (k *karman) drainQueue(topic string, n int) []*message.Message {
	k.t.Helper()
	var out []*message.Message
	var offset int64
	deadline := time.Now().Add(60 * time.Second)
	for len(out) < n {
		if time.Now().After(deadline) {
			k.t.Fatalf("%s holds %d messages, want %d", topic, len(out), n)
		}
		resp := k.invoke(wire.PullMessage, &wire.PullMessageRequestHeader{
			ConsumerGroup: "compat-inspector", Topic: topic, QueueOffset: offset, MaxMsgNums: 32,
			SysFlag: wire.PullFlagSuspend | wire.PullFlagSubscription, SuspendTimeoutMillis: 5000,
			Subscription: "*", ExpressionType: wire.ExpressionTag,
		}, nil)
		switch resp.ResponseCode() {
		case wire.Success, wire.PullNotFound, wire.PullRetryImmediately:
		case wire.TopicNotExist: // not created yet
			time.Sleep(10 * time.Millisecond)
			continue
		default:
			k.t.Fatalf("pull %s: %s %s", topic, resp.ResponseCode(), resp.Remark)
		}
		for body := resp.Body; len(body) > 0; {
			m, size, err := message.DecodeStored(body)
			if err != nil {
				k.t.Fatal(err)
			}
			out = append(out, m)
			body = body[size:]
		}
		fmt.Sscan(resp.ExtFields["nextBeginOffset"], &offset)
	}
	return out
}

var instances atomic.Int64

// instance returns a client instance name unique in the process: the Go
// client shares one connection set per instance name, and refuses a
// second one that talks to other name servers.
func instance(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, instances.Add(1))
}

func (k *karman) producer(opts ...producer.Option) *producerClient {
	k.t.Helper()
	opts = append([]producer.Option{
		producer.WithNameServer([]string{k.namesrv}),
		producer.WithInstanceName(instance("producer")),
		producer.WithGroupName("compat-producer"),
		producer.WithRetry(2),
	}, opts...)
	p, err := producer.NewDefaultProducer(opts...)
	if err != nil {
		k.t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		k.t.Fatal(err)
	}
	k.t.Cleanup(func() { p.Shutdown() })
	return &producerClient{t: k.t, p: p}
}

type producerClient struct {
	t *testing.T
	p interface {
		SendSync(context.Context, ...*primitive.Message) (*primitive.SendResult, error)
		SendAsync(context.Context, func(context.Context, *primitive.SendResult, error), ...*primitive.Message) error
		SendOneWay(context.Context, ...*primitive.Message) error
		Shutdown() error
	}
}

// send sends msgs synchronously (as one batch when there are several) and
// expects SEND_OK.
func (p *producerClient) send(msgs ...*primitive.Message) *primitive.SendResult {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := p.p.SendSync(ctx, msgs...)
	if err != nil {
		p.t.Fatalf("send: %v", err)
	}
	if res.Status != primitive.SendOK {
		p.t.Fatalf("send: %v", res)
	}
	return res
}

// received collects what a push consumer consumed.
type received struct {
	mu    sync.Mutex
	msgs  []*primitive.MessageExt
	bySeq map[string]int // body → deliveries
	cond  chan struct{}  // closed and replaced on every delivery
}

func newReceived() *received {
	return &received{bySeq: map[string]int{}, cond: make(chan struct{})}
}

func (r *received) add(msgs ...*primitive.MessageExt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		r.msgs = append(r.msgs, m)
		r.bySeq[string(m.Body)]++
	}
	close(r.cond)
	r.cond = make(chan struct{})
}

// distinct returns how many different bodies arrived.
func (r *received) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bySeq)
}

func (r *received) count(body string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bySeq[body]
}

// waitFor waits until ok holds, re-checking after every delivery.
func (r *received) waitFor(t *testing.T, what string, timeout time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		r.mu.Lock()
		ch := r.cond
		r.mu.Unlock()
		if ok() {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// pushConsumer starts a push consumer of group subscribing topic (tag
// expression expr) whose listener hands messages to handle.
func (k *karman) pushConsumer(group, topic, expr string, handle func(...*primitive.MessageExt) consumer.ConsumeResult, opts ...consumer.Option) interface{ Shutdown() error } {
	k.t.Helper()
	opts = append([]consumer.Option{
		consumer.WithNameServer([]string{k.namesrv}),
		consumer.WithGroupName(group),
		consumer.WithInstance(instance("consumer")),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	}, opts...)
	c, err := consumer.NewPushConsumer(opts...)
	if err != nil {
		k.t.Fatal(err)
	}
	err = c.Subscribe(topic, consumer.MessageSelector{Type: consumer.TAG, Expression: expr},
		func(ctx context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
			return handle(msgs...), nil
		})
	if err != nil {
		k.t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		k.t.Fatal(err)
	}
	var once sync.Once
	stop := func() error {
		var err error
		once.Do(func() { err = c.Shutdown() })
		return err
	}
	k.t.Cleanup(func() { stop() })
	return stopper(stop)
}

type stopper func() error

func (s stopper) Shutdown() error { return s() }
