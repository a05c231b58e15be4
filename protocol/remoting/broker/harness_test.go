package broker

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/engine/registry"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// harness is an engine, a Broker on it and a server on a loopback port.
type harness struct {
	t    testing.TB
	eng  *engine.Engine
	b    *Broker
	srv  *server.Server
	addr string
}

type harnessOptions struct {
	engine engine.Options
	broker Options
}

func newHarness(t testing.TB) *harness {
	return newHarnessWith(t, harnessOptions{
		engine: engine.Options{AutoCreateTopics: true, AutoCreateGroups: true},
		broker: Options{AutoCreateTopics: true, AutoCreateGroups: true},
	})
}

func newHarnessWith(t testing.TB, o harnessOptions) *harness {
	t.Helper()
	if o.engine.SegmentSize == 0 {
		o.engine.SegmentSize = 4 << 20
	}
	if o.engine.MaxMessageSize == 0 {
		o.engine.MaxMessageSize = 1 << 20
	}
	eng, err := engine.Open(t.TempDir(), &o.engine)
	if err != nil {
		t.Fatal(err)
	}
	b := New(eng, o.broker)
	mux := server.NewMux()
	b.Register(mux)
	srv := server.New(mux, server.Options{Busy: b.Busy, OnClose: b.OnClose})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("server shutdown: %v", err)
		}
		b.Close()
		if err := eng.Close(); err != nil {
			t.Errorf("engine close: %v", err)
		}
	})
	return &harness{t: t, eng: eng, b: b, srv: srv, addr: ln.Addr().String()}
}

// holds returns a channel that receives a value each time a pull starts
// waiting for messages. Call it before any pull.
func (h *harness) holds() <-chan struct{} {
	ch := make(chan struct{}, 16)
	hook := func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	h.b.testHookHold.Store(&hook)
	return ch
}

// dial connects a client; handler (may be nil) answers the broker's own
// requests.
func (h *harness) dial(handler peer.Handler) *peer.Peer {
	h.t.Helper()
	p, err := peer.Dial(context.Background(), h.addr, peer.Options{RequestTimeout: 30 * time.Second, Handler: handler})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { p.Close() })
	return p
}

func invoke(t testing.TB, p *peer.Peer, req *wire.Command) *wire.Command {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := p.Invoke(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", wire.RequestCode(req.Code), err)
	}
	return resp
}

func request(code wire.RequestCode, h wire.Header, body []byte) *wire.Command {
	req := wire.NewRequest(code, nil)
	if h != nil {
		req.EncodeHeader(h)
	}
	req.Body = body
	return req
}

func wantCode(t testing.TB, resp *wire.Command, code wire.ResponseCode) {
	t.Helper()
	if resp.ResponseCode() != code {
		t.Fatalf("%s: got %s (%q), want %s", resp, resp.ResponseCode(), resp.Remark, code)
	}
}

func ext(t *testing.T, resp *wire.Command, key string) int64 {
	t.Helper()
	v, ok := resp.ExtFields[key]
	if !ok {
		t.Fatalf("response %s has no %s: %v", resp, key, resp.ExtFields)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("response %s: %s = %q: %v", resp, key, v, err)
	}
	return n
}

func props(kv ...string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return string(message.AppendProperties(nil, m))
}

func sendHeader(topic string, queue int32, properties string) *wire.SendMessageRequestHeader {
	return &wire.SendMessageRequestHeader{
		ProducerGroup: "pg", Topic: topic, DefaultTopic: message.TopicAutoCreate, DefaultTopicQueueNums: 4,
		QueueID: queue, BornTimestamp: time.Now().UnixMilli(), Properties: properties,
	}
}

// send sends one message and expects SUCCESS.
func (h *harness) send(p *peer.Peer, topic string, queue int32, body string, kv ...string) *wire.Command {
	h.t.Helper()
	resp := invoke(h.t, p, request(wire.SendMessage, sendHeader(topic, queue, props(kv...)), []byte(body)))
	wantCode(h.t, resp, wire.Success)
	return resp
}

func pullHeader(group, topic string, queue int32, offset int64) *wire.PullMessageRequestHeader {
	return &wire.PullMessageRequestHeader{
		ConsumerGroup: group, Topic: topic, QueueID: queue, QueueOffset: offset, MaxMsgNums: 32,
		SysFlag: wire.PullFlagSubscription, Subscription: "*", ExpressionType: wire.ExpressionTag,
	}
}

// pull pulls once everything sent so far is pullable.
func (h *harness) pull(p *peer.Peer, ph *wire.PullMessageRequestHeader) *wire.Command {
	h.t.Helper()
	h.dispatched()
	return invoke(h.t, p, request(wire.PullMessage, ph, nil))
}

// dispatched waits until every message stored so far is indexed.
func (h *harness) dispatched() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.eng.WaitDispatched(ctx); err != nil {
		h.t.Fatal(err)
	}
}

// records decodes a pull or query body.
func records(t *testing.T, body []byte) []*message.Message {
	t.Helper()
	var out []*message.Message
	for len(body) > 0 {
		m, n, err := message.DecodeStored(body)
		if err != nil {
			t.Fatalf("decode record: %v", err)
		}
		out = append(out, m)
		body = body[n:]
	}
	return out
}

// heartbeat registers clientID as a consumer of group subscribing topic
// with a tag expression (or as a producer of group when topic is empty).
func heartbeat(t *testing.T, p *peer.Peer, clientID, group, topic, expr string) {
	t.Helper()
	hb := wire.HeartbeatData{ClientID: clientID}
	if topic == "" {
		hb.ProducerDataSet = []wire.ProducerData{{GroupName: group}}
	} else {
		hb.ConsumerDataSet = []wire.ConsumerData{{
			GroupName: group, ConsumeType: wire.ConsumePassively, MessageModel: wire.Clustering,
			ConsumeFromWhere: wire.ConsumeFromLastOffset,
			SubscriptionDataSet: []wire.SubscriptionData{
				{Topic: topic, SubString: expr, ExpressionType: wire.ExpressionTag, SubVersion: time.Now().UnixNano()},
				{Topic: message.RetryTopic(group), SubString: "*", ExpressionType: wire.ExpressionTag},
			},
		}}
	}
	body, err := wire.EncodeJSONBody(hb)
	if err != nil {
		t.Fatal(err)
	}
	wantCode(t, invoke(t, p, request(wire.HeartBeat, nil, body)), wire.Success)
}

// waitChange waits for a registry change of kind in group.
func waitChange(t *testing.T, ch <-chan registry.Change, group string, kind registry.ChangeKind) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case c := <-ch:
			if c.Group == group && c.Kind == kind {
				return
			}
		case <-timeout:
			t.Fatalf("no %s change in group %s", kind, group)
		}
	}
}

// recorder is a peer.Handler that passes the broker's requests to a
// channel and answers SUCCESS (dropped for oneway requests).
type recorder chan *wire.Command

func (r recorder) HandleRequest(ctx context.Context, req *wire.Command) *wire.Command {
	select {
	case r <- req:
	case <-ctx.Done():
	}
	return wire.NewResponse(req, wire.Success, "")
}

func (r recorder) next(t *testing.T, code wire.RequestCode) *wire.Command {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case req := <-r:
			if req.RequestCode() == code {
				return req
			}
		case <-timeout:
			t.Fatalf("no %s request from the broker", code)
			return nil
		}
	}
}
