package namesrv

import (
	"context"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	remoting "github.com/karmanmq/karman/protocol/remoting/namesrv"
	"github.com/karmanmq/karman/protocol/remoting/wire"
	karman "github.com/karmanmq/karman/server"
	"github.com/prometheus/client_golang/prometheus"
)

func TestMain(m *testing.M) {
	rlog.SetLogLevel("error") // the Go client logs every route refresh at info
	os.Exit(m.Run())
}

// startFrontend runs the name-server front-end on a loopback port until
// the test ends.
func startFrontend(t testing.TB) (addr string, reg *prometheus.Registry) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg = prometheus.NewRegistry()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	stop, err := Start(context.Background(), karman.Host{Listener: ln, Logger: log, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return ln.Addr().String(), reg
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// brokerStandIn accepts TCP connections on the address a registered
// broker advertises and records that someone dialed it, then hangs up.
// No broker runs in this test: it only shows which address the client
// took from the route.
type brokerStandIn struct {
	ln     net.Listener
	mu     sync.Mutex
	dialed int
}

func newBrokerStandIn(t *testing.T) *brokerStandIn {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &brokerStandIn{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialed++
			b.mu.Unlock()
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return b
}

func (b *brokerStandIn) addr() string { return b.ln.Addr().String() }

func (b *brokerStandIn) dials() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dialed
}

func registrar(t *testing.T, nameServer, name string, id int64, addr string, topics ...remoting.TopicConfig) *remoting.Registrar {
	t.Helper()
	r, err := remoting.NewRegistrar(remoting.RegistrarOptions{
		NameServers: []string{nameServer},
		BrokerName:  name,
		BrokerID:    id,
		BrokerAddr:  addr,
		Topics:      func() []remoting.TopicConfig { return topics },
		Interval:    time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.RegisterAll(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

func topic(name string, queues int32, perm int32) remoting.TopicConfig {
	return remoting.TopicConfig{TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: perm}
}

func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestGoClient registers brokers through the Registrar and reads the
// routes back with the RocketMQ Go client's own name-server calls and
// route decoder.
func TestGoClient(t *testing.T) {
	nsAddr, reg := startFrontend(t)
	brokerA := newBrokerStandIn(t)
	const rw = wire.PermRead | wire.PermWrite
	ra := registrar(t, nsAddr, "broker-a", 0, brokerA.addr(),
		topic("TopicA", 4, rw), topic("TopicRO", 2, wire.PermRead), topic("TBW102", 8, rw|wire.PermInherit))
	registrar(t, nsAddr, "broker-b", 0, "127.0.0.1:1", topic("TopicA", 2, rw))
	registrar(t, nsAddr, "broker-a", 1, "127.0.0.1:2") // a replica: brokerAddrs {"0":…,"1":…}

	if got := gauge(t, reg, "karman_namesrv_brokers"); got != 3 {
		t.Errorf("karman_namesrv_brokers = %v, want 3", got)
	}
	if got := gauge(t, reg, "karman_namesrv_topics"); got != 3 {
		t.Errorf("karman_namesrv_topics = %v, want 3", got)
	}

	adm, err := admin.NewAdmin(admin.WithResolver(primitive.NewPassthroughResolver([]string{nsAddr})))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// GET_ALL_TOPIC_LIST_FROM_NAMESERVER.
	list, err := adm.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(list.TopicList)
	if !slices.Equal(list.TopicList, []string{"TBW102", "TopicA", "TopicRO"}) {
		t.Errorf("topic list %q", list.TopicList)
	}

	// GET_ROUTEINFO_BY_TOPIC through the client's route decoder: it needs
	// the master under brokerAddrs key 0 to publish to a broker.
	mqs, err := adm.FetchPublishMessageQueues(ctx, "TopicA")
	if err != nil {
		t.Fatal(err)
	}
	var queues []string
	for _, mq := range mqs {
		queues = append(queues, mq.BrokerName+"/"+strconv.Itoa(mq.QueueId))
	}
	if want := []string{"broker-a/0", "broker-a/1", "broker-a/2", "broker-a/3", "broker-b/0", "broker-b/1"}; !slices.Equal(queues, want) {
		t.Errorf("publish queues of TopicA %q, want %q", queues, want)
	}
	if mqs, err := adm.FetchPublishMessageQueues(ctx, "TopicRO"); err != nil || len(mqs) != 0 {
		t.Errorf("read-only topic: %d publish queues, %v", len(mqs), err)
	}
	clusters, err := adm.FetchClusterList("TopicA")
	if err != nil || !slices.Equal(clusters, []string{"DefaultCluster"}) {
		t.Errorf("clusters of TopicA %q %v", clusters, err)
	}
	if _, err := adm.FetchClusterList("NoSuchTopic"); err == nil || !strings.Contains(err.Error(), "topic not exist") {
		t.Errorf("unknown topic: %v", err)
	}

	// A producer takes the master's address from the route and dials it.
	p, err := producer.NewDefaultProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{nsAddr})),
		producer.WithInstanceName("karman-namesrv-test"),
		producer.WithGroupName("karman-namesrv-test"),
		producer.WithRetry(0),
		producer.WithSendMsgTimeout(2*time.Second),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	deadline := time.Now().Add(15 * time.Second)
	for brokerA.dials() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the producer never dialed broker-a's master address")
		}
		// Fails without a broker; the dial is what counts. Queues rotate,
		// so some attempt picks broker-a.
		p.SendSync(ctx, primitive.NewMessage("TopicA", []byte("x")))
	}

	// DELETE_TOPIC_IN_NAMESRV. The client first deletes the topic on a
	// broker; none runs here, so that half goes to the name server too,
	// which answers REQUEST_CODE_NOT_SUPPORTED, and the client carries on.
	if err := adm.DeleteTopic(ctx, admin.WithTopicDelete("TopicRO"), admin.WithBrokerAddrDelete(nsAddr), admin.WithNameSrvAddr([]string{nsAddr})); err != nil {
		t.Fatal(err)
	}
	list, err = adm.FetchAllTopicList(ctx)
	if err != nil || slices.Contains(list.TopicList, "TopicRO") {
		t.Errorf("after delete: %q %v", list.TopicList, err)
	}

	// A broker that shuts down unregisters; its topics go with it.
	if err := ra.Close(ctx); err != nil {
		t.Fatal(err)
	}
	list, err = adm.FetchAllTopicList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(list.TopicList)
	if !slices.Equal(list.TopicList, []string{"TBW102", "TopicA"}) { // the replica still serves broker-a's topics
		t.Errorf("after broker-a's master left: %q", list.TopicList)
	}
}

// TestExpiry: a broker that stops registering but keeps its connection
// open is dropped after its timeout.
func TestExpiry(t *testing.T) {
	old := expireEvery
	expireEvery = 50 * time.Millisecond
	t.Cleanup(func() { expireEvery = old })
	nsAddr, reg := startFrontend(t)

	r, err := remoting.NewRegistrar(remoting.RegistrarOptions{
		NameServers: []string{nsAddr},
		BrokerName:  "broker-a",
		BrokerAddr:  "127.0.0.1:10911",
		Topics: func() []remoting.TopicConfig {
			return []remoting.TopicConfig{topic("T", 1, wire.PermRead|wire.PermWrite)}
		},
		Interval:      time.Hour,
		BrokerTimeout: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close(context.Background())
	if err := r.RegisterAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := gauge(t, reg, "karman_namesrv_topics"); got != 1 {
		t.Fatalf("topics %v after registering", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for gauge(t, reg, "karman_namesrv_brokers") != 0 || gauge(t, reg, "karman_namesrv_topics") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the silent broker was not expired")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Registering again brings it back.
	if err := r.RegisterAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := gauge(t, reg, "karman_namesrv_brokers"); got != 1 {
		t.Errorf("brokers %v after registering again", got)
	}
}
