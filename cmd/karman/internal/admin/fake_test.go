package admin

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// fake is a name server and a broker that answer the way Java ones do:
// fastjson bodies with non-string map keys, no GET_TOPIC_STATS_INFO, no
// GET_CONSUMER_CONNECTION_LIST, offset resets only with consumers online,
// and no KARMAN_RESEND_DEAD_LETTER unless a test adds it.
type fake struct {
	namesrv, broker string

	mu       sync.Mutex
	requests []wire.RequestCode
	commits  map[int32]int64  // UPDATE_CONSUMER_OFFSET by queue
	sent     []*wire.Command  // SEND_MESSAGE requests
	mux      *server.Mux      // the broker's
	dead     *message.Message // the dead letter QUERY_MESSAGE finds
}

func (f *fake) note(code wire.RequestCode) {
	f.mu.Lock()
	f.requests = append(f.requests, code)
	f.mu.Unlock()
}

func (f *fake) saw(code wire.RequestCode) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.requests {
		if c == code {
			return true
		}
	}
	return false
}

func serve(t *testing.T, mux *server.Mux) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(mux, server.Options{})
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return ln.Addr().String()
}

func ok(req *wire.Command, body string) *wire.Command {
	resp := wire.NewResponse(req, wire.Success, "")
	if body != "" {
		resp.Body = []byte(body)
	}
	return resp
}

func offsetResp(req *wire.Command, off int64) *wire.Command {
	resp := wire.NewResponse(req, wire.Success, "")
	resp.EncodeHeader(&wire.OffsetResponseHeader{Offset: off})
	return resp
}

func newFake(t *testing.T, extra func(f *fake, mux *server.Mux)) *fake {
	t.Helper()
	f := &fake{commits: map[int32]int64{}}
	h := func(code wire.RequestCode, fn func(req *wire.Command) *wire.Command) {
		f.mux.HandleFunc(code, server.KindDefault, func(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
			f.note(code)
			return fn(req)
		})
	}
	f.mux = server.NewMux()
	h(wire.GetAllTopicConfig, func(req *wire.Command) *wire.Command {
		return ok(req, `{"dataVersion":{"counter":1,"timestamp":1},"topicConfigTable":{"T":{"attributes":{"message.type":"FIFO"},"order":false,"perm":6,"readQueueNums":2,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":2}}}`)
	})
	h(wire.GetMinOffset, func(req *wire.Command) *wire.Command {
		var hd wire.GetMinOffsetRequestHeader
		req.DecodeHeader(&hd)
		return offsetResp(req, int64(hd.QueueID))
	})
	h(wire.GetMaxOffset, func(req *wire.Command) *wire.Command {
		var hd wire.GetMaxOffsetRequestHeader
		req.DecodeHeader(&hd)
		return offsetResp(req, 10+int64(hd.QueueID))
	})
	h(wire.GetAllSubscriptionGroupConfig, func(req *wire.Command) *wire.Command {
		return ok(req, `{"dataVersion":{"counter":1},"subscriptionGroupTable":{"g":{"brokerId":0,"consumeBroadcastEnable":false,"consumeEnable":true,"consumeFromMinEnable":true,"consumeMessageOrderly":true,"groupName":"g","retryMaxTimes":4,"retryQueueNums":1}}}`)
	})
	h(wire.GetConsumerListByGroup, func(req *wire.Command) *wire.Command {
		return ok(req, `{"consumerIdList":["c2","c1"]}`)
	})
	h(wire.GetConsumeStats, func(req *wire.Command) *wire.Command {
		return ok(req, `{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"brokerOffset":11,"consumerOffset":11,"lastTimestamp":0,"pullOffset":11},{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"brokerOffset":10,"consumerOffset":4,"lastTimestamp":1700000000000,"pullOffset":4}}}`)
	})
	h(wire.InvokeBrokerToResetOffset, func(req *wire.Command) *wire.Command {
		return wire.NewResponse(req, wire.ConsumerNotOnline, "Consumer not online, so can not reset offset")
	})
	h(wire.SearchOffsetByTimestamp, func(req *wire.Command) *wire.Command { return offsetResp(req, 3) })
	h(wire.QueryConsumerOffset, func(req *wire.Command) *wire.Command {
		var hd wire.QueryConsumerOffsetRequestHeader
		req.DecodeHeader(&hd)
		if hd.QueueID == 1 {
			return offsetResp(req, 2) // behind the reset time: kept unless forced
		}
		return offsetResp(req, 5)
	})
	h(wire.UpdateConsumerOffset, func(req *wire.Command) *wire.Command {
		var hd wire.UpdateConsumerOffsetRequestHeader
		req.DecodeHeader(&hd)
		f.mu.Lock()
		f.commits[hd.QueueID] = hd.CommitOffset
		f.mu.Unlock()
		return ok(req, "")
	})
	h(wire.QueryMessage, func(req *wire.Command) *wire.Command {
		var hd wire.QueryMessageRequestHeader
		req.DecodeHeader(&hd)
		f.mu.Lock()
		dead := f.dead
		f.mu.Unlock()
		if dead == nil || !hd.UniqueKeyQuery || hd.Topic != dead.Topic || hd.Key != dead.UniqKey() {
			return wire.NewResponse(req, wire.QueryNotFound, "no message")
		}
		rec, err := message.AppendStored(nil, dead)
		if err != nil {
			t.Error(err)
		}
		return ok(req, string(rec))
	})
	h(wire.ViewMessageByID, func(req *wire.Command) *wire.Command {
		return wire.NewResponse(req, wire.SystemError, "no message at that offset")
	})
	h(wire.SendMessage, func(req *wire.Command) *wire.Command {
		f.mu.Lock()
		f.sent = append(f.sent, req)
		f.mu.Unlock()
		var hd wire.SendMessageRequestHeader
		req.DecodeHeader(&hd)
		resp := wire.NewResponse(req, wire.Success, "")
		resp.EncodeHeader(&wire.SendMessageResponseHeader{MsgID: "7F00000100002A9F00000000000000FF", QueueID: hd.QueueID, QueueOffset: 9})
		return resp
	})
	if extra != nil {
		extra(f, f.mux)
	}
	f.broker = serve(t, f.mux)

	ns := server.NewMux()
	nsh := func(code wire.RequestCode, fn func(req *wire.Command) *wire.Command) {
		ns.HandleFunc(code, server.KindNamesrv, func(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command { return fn(req) })
	}
	brokerData := `{"brokerAddrs":{0:"` + f.broker + `"},"brokerName":"broker-a","cluster":"C","enableActingMaster":false}`
	nsh(wire.GetBrokerClusterInfo, func(req *wire.Command) *wire.Command {
		return ok(req, `{"brokerAddrTable":{"broker-a":`+brokerData+`},"clusterAddrTable":{"C":["broker-a"]}}`)
	})
	nsh(wire.GetRouteInfoByTopic, func(req *wire.Command) *wire.Command {
		var hd wire.GetRouteInfoRequestHeader
		req.DecodeHeader(&hd)
		perm := "6"
		switch hd.Topic {
		case "T", "%DLQ%g":
		case "%DLQ%writeonly": // as Java brokers before 5.0 create them
			perm = "2"
		default:
			return wire.NewResponse(req, wire.TopicNotExist, "No topic route info in name server for the topic: "+hd.Topic)
		}
		return ok(req, `{"brokerDatas":[`+brokerData+`],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":`+perm+`,"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2}]}`)
	})
	f.namesrv = serve(t, ns)
	return f
}

func (f *fake) client(t *testing.T, timeout time.Duration) *Client {
	t.Helper()
	c, err := New(Options{NameServers: []string{f.namesrv}, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestJavaStyleCluster(t *testing.T) {
	f := newFake(t, nil)
	c := f.client(t, 5*time.Second)
	ctx := context.Background()

	brokers, err := c.Brokers(ctx)
	if err != nil || len(brokers) != 1 || brokers[0] != (Broker{Cluster: "C", Name: "broker-a", ID: 0, Addr: f.broker}) {
		t.Fatalf("Brokers = %+v, %v", brokers, err)
	}

	d, err := c.DescribeTopic(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	if d.Type != "FIFO" || len(d.Queues) != 2 || d.Queues[1] != (QueueOffsets{BrokerName: "broker-a", QueueID: 1, MinOffset: 1, MaxOffset: 11}) || d.Messages != 20 {
		t.Errorf("DescribeTopic = %+v", d)
	}
	if !f.saw(wire.GetMinOffset) {
		t.Error("no fallback to GET_MIN_OFFSET")
	}

	g, err := c.DescribeGroup(ctx, "g", "")
	if err != nil {
		t.Fatal(err)
	}
	if g.Config == nil || !g.Config.FIFO || g.Config.MaxAttempts != 5 || !g.Online || len(g.Members) != 2 || g.Members[0].ClientID != "c1" {
		t.Errorf("DescribeGroup config/members = %+v %+v", g.Config, g.Members)
	}
	if len(g.Queues) != 2 || g.Queues[0].QueueID != 0 || g.Queues[0].Lag != 6 || g.Queues[0].LastTimestamp != 1700000000000 || g.TotalLag != 6 {
		t.Errorf("DescribeGroup queues = %+v, total %d", g.Queues, g.TotalLag)
	}

	r, err := c.ResetOffset(ctx, "g", "T", 1700000000000, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []QueueOffset{{"broker-a", 0, 3, ViaCommit}, {"broker-a", 1, 2, ViaCommit}}
	if len(r.Offsets) != 2 || r.Offsets[0] != want[0] || r.Offsets[1] != want[1] {
		t.Errorf("ResetOffset(force=false) = %+v, want %+v", r.Offsets, want)
	}
	f.mu.Lock()
	if len(f.commits) != 1 || f.commits[0] != 3 {
		t.Errorf("commits = %v, want only queue 0 at 3", f.commits)
	}
	f.mu.Unlock()
	if r, err = c.ResetOffset(ctx, "g", "T", 1700000000000, true); err != nil || r.Offsets[1].Offset != 3 {
		t.Errorf("ResetOffset(force=true) = %+v, %v", r, err)
	}

	if _, err := c.DescribeTopic(ctx, "nope"); !errors.Is(err, ErrTopicNotFound) || !strings.Contains(err.Error(), "topic nope not found") {
		t.Errorf("DescribeTopic(nope): %v", err)
	}
}

func TestResendDeadLetterBySend(t *testing.T) {
	f := newFake(t, nil)
	dead := &message.Message{
		Topic: "%DLQ%g", Body: []byte("hello"), Flag: 7,
		Properties: map[string]string{
			"UNIQ_KEY": "C0A800050E2A18B4AAC27C6F38E40001", "KEYS": "k1 k2", "TAGS": "t",
			"DLQ_ORIGIN_TOPIC": "T", "DLQ_ORIGIN_MESSAGE_ID": "x", "RETRY_TOPIC": "T", "custom": "v",
		},
		BornTimestamp:  1700000000000,
		BornHost:       netip.MustParseAddrPort("10.0.0.9:5000"),
		StoreHost:      netip.MustParseAddrPort("127.0.0.1:10911"),
		ReconsumeTimes: 5,
	}
	f.dead = dead
	c := f.client(t, 5*time.Second)

	r, err := c.ResendDeadLetter(context.Background(), "g", dead.UniqKey())
	if err != nil {
		t.Fatal(err)
	}
	if r.Via != ViaSend || r.Topic != "T" || r.MsgID != dead.UniqKey() || r.QueueOffset != 9 || r.Group != "g" {
		t.Errorf("Resend = %+v", r)
	}
	f.mu.Lock()
	sent := f.sent
	f.mu.Unlock()
	if len(sent) != 1 {
		t.Fatalf("%d sends", len(sent))
	}
	var h wire.SendMessageRequestHeader
	if err := sent[0].DecodeHeader(&h); err != nil {
		t.Fatal(err)
	}
	props, _ := message.DecodeProperties([]byte(h.Properties))
	if h.Topic != "T" || h.Flag != 7 || h.ReconsumeTimes != 0 || string(sent[0].Body) != "hello" ||
		props["UNIQ_KEY"] != dead.UniqKey() || props["KEYS"] != "k1 k2" || props["custom"] != "v" ||
		props["DLQ_ORIGIN_TOPIC"] != "" || props["RETRY_TOPIC"] != "" {
		t.Errorf("sent %+v with properties %v", h, props)
	}
	if !f.saw(wire.QueryMessage) {
		t.Error("no QUERY_MESSAGE fallback")
	}

	if _, err := c.ResendDeadLetter(context.Background(), "g", "C0A800050E2A18B4AAC27C6F38E4FFFF"); !errors.Is(err, ErrMessageNotFound) {
		t.Errorf("unknown dead letter: %v", err)
	}
}

func TestResendDeadLetterByBroker(t *testing.T) {
	f := newFake(t, func(f *fake, mux *server.Mux) {
		mux.HandleFunc(wire.KarmanResendDeadLetter, server.KindDefault, func(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
			var h wire.ResendDeadLetterRequestHeader
			if err := req.DecodeHeader(&h); err != nil {
				return wire.NewResponse(req, wire.InvalidParameter, err.Error())
			}
			if h.MsgID != "U1" {
				return wire.NewResponse(req, wire.QueryNotFound, "no such dead letter")
			}
			resp := wire.NewResponse(req, wire.Success, "")
			resp.EncodeHeader(&wire.ResendDeadLetterResponseHeader{Topic: "T", MsgID: "U1", OffsetMsgID: "7F00000100002A9F0000000000000010", QueueID: 1, QueueOffset: 12})
			return resp
		})
	})
	c := f.client(t, 5*time.Second)
	r, err := c.ResendDeadLetter(context.Background(), "g", "U1")
	if err != nil {
		t.Fatal(err)
	}
	want := Resend{Group: "g", DeadLetterID: "U1", Topic: "T", MsgID: "U1", OffsetMsgID: "7F00000100002A9F0000000000000010", BrokerName: "broker-a", QueueID: 1, QueueOffset: 12, Via: ViaResend}
	if *r != want {
		t.Errorf("Resend = %+v, want %+v", *r, want)
	}
	if f.saw(wire.QueryMessage) || f.saw(wire.SendMessage) {
		t.Error("the client fell back although the broker resent")
	}
	if _, err := c.ResendDeadLetter(context.Background(), "g", "U2"); !errors.Is(err, ErrMessageNotFound) {
		t.Errorf("unknown dead letter: %v", err)
	}
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, _ := New(Options{NameServers: []string{addr}, Timeout: time.Second})
	defer c.Close()
	_, err = c.Brokers(context.Background())
	if !errors.Is(err, ErrUnreachable) || !strings.HasPrefix(err.Error(), "cannot reach name server "+addr+": ") {
		t.Errorf("Brokers: %v", err)
	}

	// A name server that never answers.
	mux := server.NewMux()
	block := make(chan struct{})
	defer close(block)
	mux.HandleFunc(wire.GetBrokerClusterInfo, server.KindNamesrv, func(ctx context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
		select {
		case <-block:
		case <-ctx.Done():
		}
		return nil
	})
	slow := serve(t, mux)
	c2, _ := New(Options{NameServers: []string{slow}, Timeout: 200 * time.Millisecond})
	defer c2.Close()
	_, err = c2.Brokers(context.Background())
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "did not answer GET_BROKER_CLUSTER_INFO in time") {
		t.Errorf("Brokers from a silent name server: %v", err)
	}

	// Several name servers: the first that answers wins.
	f := newFake(t, nil)
	c3, _ := New(Options{NameServers: []string{addr, f.namesrv}, Timeout: time.Second})
	defer c3.Close()
	if bs, err := c3.Brokers(context.Background()); err != nil || len(bs) != 1 {
		t.Errorf("Brokers with a dead first name server: %v, %v", bs, err)
	}
}
