package namesrv

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/json"
	"errors"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

type fixture struct {
	routes *memRoutes
	kv     *memKV
	proc   *Processor
	addr   string
	stop   func()
}

// startNamesrv serves a Processor over memRoutes on a loopback port.
func startNamesrv(t *testing.T, opts Options) *fixture {
	t.Helper()
	return startNamesrvOn(t, "127.0.0.1:0", opts)
}

// startNamesrvOn serves a Processor over memRoutes on addr until the test
// ends or f.stop is called.
func startNamesrvOn(t *testing.T, addr string, opts Options) *fixture {
	t.Helper()
	f := &fixture{routes: newMemRoutes(), kv: newMemKV()}
	f.proc = New(f.routes, f.kv, opts)
	mux := server.NewMux()
	f.proc.Mount(mux)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	srv := server.New(mux, server.Options{OnClose: f.proc.ConnClosed})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	var once sync.Once
	f.stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil {
				t.Errorf("shutdown: %v", err)
			}
			if err := <-done; !errors.Is(err, server.ErrServerClosed) {
				t.Errorf("serve: %v", err)
			}
		})
	}
	t.Cleanup(f.stop)
	return f
}

func dialPeer(t *testing.T, addr string, st wire.SerializeType) *peer.Peer {
	t.Helper()
	p, err := peer.Dial(context.Background(), addr, peer.Options{RequestTimeout: 5 * time.Second, SerializeType: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func request(code wire.RequestCode, h wire.Header, body []byte) *wire.Command {
	req := wire.NewRequest(code, nil)
	if h != nil {
		req.EncodeHeader(h)
	}
	req.Body = body
	return req
}

func topicCfg(name string, queues int32) TopicConfig {
	return TopicConfig{TopicName: name, ReadQueueNums: queues, WriteQueueNums: queues, Perm: wire.PermRead | wire.PermWrite}
}

// registerRequest builds REGISTER_BROKER the way a broker does.
func registerRequest(t *testing.T, name string, id int64, addr string, complete, compressed bool, topics ...TopicConfig) *wire.Command {
	t.Helper()
	body, err := (&RegisterBrokerBody{Topics: topics, DataVersion: DataVersion{Timestamp: 1700000000000, Counter: 1}}).Encode(compressed)
	if err != nil {
		t.Fatal(err)
	}
	req := request(wire.RegisterBroker, &wire.RegisterBrokerRequestHeader{
		BrokerName: name, BrokerAddr: addr, ClusterName: "DefaultCluster", HAServerAddr: addr + "-ha",
		BrokerID: id, Compressed: compressed, BodyCRC32: BodyCRC32(body),
	}, body)
	if complete {
		req.SetExt(ExtCompleteTopics, "true")
	}
	return req
}

// exchange is one request and what its answer must be.
type exchange struct {
	name   string
	req    func(t *testing.T) *wire.Command
	code   wire.ResponseCode
	remark string                                 // a substring of the remark
	body   string                                 // the exact body, when set
	check  func(t *testing.T, resp *wire.Command) // more checks, when set
}

func runExchanges(t *testing.T, p *peer.Peer, xs []exchange) {
	t.Helper()
	for _, x := range xs {
		resp, err := p.Invoke(context.Background(), x.req(t))
		if err != nil {
			t.Fatalf("%s: %v", x.name, err)
		}
		if resp.ResponseCode() != x.code || !strings.Contains(resp.Remark, x.remark) {
			t.Errorf("%s: %s %q, want %s with %q", x.name, resp.ResponseCode(), resp.Remark, x.code, x.remark)
			continue
		}
		if x.body != "" && string(resp.Body) != x.body {
			t.Errorf("%s: body\n%s\nwant\n%s", x.name, resp.Body, x.body)
		}
		if x.check != nil {
			x.check(t, resp)
		}
	}
}

func fixed(req *wire.Command) func(*testing.T) *wire.Command {
	return func(*testing.T) *wire.Command { return req }
}

func TestProcessor(t *testing.T) {
	for _, st := range []wire.SerializeType{wire.JSON, wire.RocketMQ} {
		t.Run(st.String(), func(t *testing.T) {
			f := startNamesrv(t, Options{})
			p := dialPeer(t, f.addr, st)
			runExchanges(t, p, []exchange{
				{name: "route of unknown topic", req: fixed(request(wire.GetRouteInfoByTopic, &wire.GetRouteInfoRequestHeader{Topic: "TopicA"}, nil)),
					code: wire.TopicNotExist, remark: "TopicA"},
				{name: "register master", code: wire.Success,
					req: func(t *testing.T) *wire.Command {
						return registerRequest(t, "broker-a", 0, "127.0.0.1:10911", true, false, topicCfg("TopicA", 4), topicCfg("TopicB", 2))
					},
					check: func(t *testing.T, resp *wire.Command) {
						if resp.ExtFields["masterAddr"] != "" || len(resp.Body) != 0 {
							t.Errorf("master registration answer: %v %q", resp.ExtFields, resp.Body)
						}
					}},
				{name: "register second broker compressed", code: wire.Success,
					req: func(t *testing.T) *wire.Command {
						return registerRequest(t, "broker-b", 0, "127.0.0.2:10911", true, true, topicCfg("TopicA", 8))
					}},
				{name: "register replica", code: wire.Success,
					req: func(t *testing.T) *wire.Command {
						return registerRequest(t, "broker-a", 1, "127.0.0.3:10911", true, false)
					},
					check: func(t *testing.T, resp *wire.Command) {
						var h wire.RegisterBrokerResponseHeader
						if err := resp.DecodeHeader(&h); err != nil || h.MasterAddr != "127.0.0.1:10911" || h.HAServerAddr != "127.0.0.1:10911-ha" {
							t.Errorf("replica registration answer: %+v %v", h, err)
						}
					}},
				{name: "route", code: wire.Success,
					req: fixed(request(wire.GetRouteInfoByTopic, &wire.GetRouteInfoRequestHeader{Topic: "TopicA"}, nil)),
					body: `{"queueDatas":[{"brokerName":"broker-a","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0},` +
						`{"brokerName":"broker-b","readQueueNums":8,"writeQueueNums":8,"perm":6,"topicSysFlag":0}],` +
						`"brokerDatas":[{"cluster":"DefaultCluster","brokerName":"broker-a","brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.3:10911"},"enableActingMaster":false},` +
						`{"cluster":"DefaultCluster","brokerName":"broker-b","brokerAddrs":{"0":"127.0.0.2:10911"},"enableActingMaster":false}],` +
						`"filterServerTable":{}}`},
				{name: "all topics", code: wire.Success,
					req:  fixed(request(wire.GetAllTopicListFromNameServer, nil, nil)),
					body: `{"topicList":["TopicA","TopicB"]}`},
				{name: "topics by cluster", code: wire.Success,
					req:  fixed(request(wire.GetTopicsByCluster, &GetTopicsByClusterRequestHeader{Cluster: "DefaultCluster"}, nil)),
					body: `{"topicList":["TopicA","TopicB"]}`},
				{name: "topics by unknown cluster", code: wire.Success,
					req:  fixed(request(wire.GetTopicsByCluster, &GetTopicsByClusterRequestHeader{Cluster: "nope"}, nil)),
					body: `{"topicList":[]}`},
				{name: "cluster info", code: wire.Success,
					req: fixed(request(wire.GetBrokerClusterInfo, nil, nil)),
					body: `{"brokerAddrTable":{` +
						`"broker-a":{"cluster":"DefaultCluster","brokerName":"broker-a","brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.3:10911"},"enableActingMaster":false},` +
						`"broker-b":{"cluster":"DefaultCluster","brokerName":"broker-b","brokerAddrs":{"0":"127.0.0.2:10911"},"enableActingMaster":false}},` +
						`"clusterAddrTable":{"DefaultCluster":["broker-a","broker-b"]}}`},
				{name: "system topics", code: wire.Success,
					req:  fixed(request(wire.GetSystemTopicListFromNS, nil, nil)),
					body: `{"topicList":["DefaultCluster","broker-a","broker-b"],"brokerAddr":"127.0.0.1:10911"}`},
				{name: "wipe broker-b's write permission", code: wire.Success,
					req: fixed(request(wire.WipeWritePermOfBroker, &wire.BrokerNameRequestHeader{BrokerName: "broker-b"}, nil)),
					check: func(t *testing.T, resp *wire.Command) {
						var h wire.WipeWritePermResponseHeader
						if err := resp.DecodeHeader(&h); err != nil || h.WipeTopicCount != 1 {
							t.Errorf("wipe answer: %+v %v", h, err)
						}
					}},
				{name: "route after the wipe", code: wire.Success,
					req: fixed(request(wire.GetRouteInfoByTopic, &wire.GetRouteInfoRequestHeader{Topic: "TopicA"}, nil)),
					check: func(t *testing.T, resp *wire.Command) {
						rd, err := wire.DecodeTopicRouteData(resp.Body)
						if err != nil || len(rd.QueueDatas) != 2 || rd.QueueDatas[0].Perm != 6 || rd.QueueDatas[1].Perm != 4 {
							t.Errorf("route %+v %v, want broker-b read-only", rd, err)
						}
					}},
				{name: "add broker-b's write permission", code: wire.Success,
					req: fixed(request(wire.AddWritePermOfBroker, &wire.BrokerNameRequestHeader{BrokerName: "broker-b"}, nil)),
					check: func(t *testing.T, resp *wire.Command) {
						var h wire.AddWritePermResponseHeader
						if err := resp.DecodeHeader(&h); err != nil || h.AddTopicCount != 1 {
							t.Errorf("add answer: %+v %v", h, err)
						}
					}},
				{name: "delete topic in namesrv", code: wire.Success,
					req: fixed(request(wire.DeleteTopicInNamesrv, &wire.DeleteTopicRequestHeader{Topic: "TopicB"}, nil))},
				{name: "delete unknown topic", code: wire.Success,
					req: fixed(request(wire.DeleteTopicInNamesrv, &wire.DeleteTopicRequestHeader{Topic: "Nope"}, nil))},
				{name: "topics after delete", code: wire.Success,
					req:  fixed(request(wire.GetAllTopicListFromNameServer, nil, nil)),
					body: `{"topicList":["TopicA"]}`},
				{name: "unregister broker-b", code: wire.Success,
					req: fixed(request(wire.UnregisterBroker, &wire.UnregisterBrokerRequestHeader{BrokerName: "broker-b", BrokerAddr: "127.0.0.2:10911", ClusterName: "DefaultCluster"}, nil))},
				{name: "route after unregister", code: wire.Success,
					req: fixed(request(wire.GetRouteInfoByTopic, &wire.GetRouteInfoRequestHeader{Topic: "TopicA"}, nil)),
					check: func(t *testing.T, resp *wire.Command) {
						rd, err := wire.DecodeTopicRouteData(resp.Body)
						if err != nil || len(rd.QueueDatas) != 1 || len(rd.BrokerDatas) != 1 || rd.BrokerDatas[0].BrokerName != "broker-a" {
							t.Errorf("route %+v %v", rd, err)
						}
					}},
			})
		})
	}
}

func TestRegisterModes(t *testing.T) {
	f := startNamesrv(t, Options{})
	p := dialPeer(t, f.addr, wire.JSON)
	topics := []TopicConfig{
		{TopicName: "T1", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, TopicSysFlag: 1, Order: true, Attributes: map[string]string{"+message.type": "FIFO"}},
		{TopicName: "T2", ReadQueueNums: 2, WriteQueueNums: 1, Perm: 4, TopicFilterType: FilterMultiTag},
	}
	for _, tc := range []struct {
		complete, compressed, partial bool
	}{
		{complete: true, compressed: false, partial: false},
		{complete: false, compressed: false, partial: true},
		{complete: true, compressed: true, partial: false},
		{complete: false, compressed: true, partial: true},
	} {
		req := registerRequest(t, "b", 0, "127.0.0.1:1", tc.complete, tc.compressed, topics...)
		resp, err := p.Invoke(context.Background(), req)
		if err != nil || resp.ResponseCode() != wire.Success {
			t.Fatalf("%+v: %v %v", tc, resp, err)
		}
		regs := f.routes.registrations()
		got := regs[len(regs)-1]
		want := slicesClone(topics)
		want[0].TopicFilterType = FilterSingleTag // the default is written out
		want[1].Attributes = map[string]string{}
		if tc.compressed { // the compressed form has no sysFlag or order
			for i := range want {
				want[i].TopicSysFlag, want[i].Order = 0, false
			}
		}
		if got.Partial != tc.partial || got.Cluster != "DefaultCluster" || got.HAAddr != "127.0.0.1:1-ha" ||
			got.DataVersion != (DataVersion{Timestamp: 1700000000000, Counter: 1}) || !reflect.DeepEqual(got.Topics, want) {
			t.Errorf("%+v: registration %+v\nwant topics %+v", tc, got, want)
		}
	}

	// An empty body (allowed by Java) registers no topics and never
	// replaces.
	req := request(wire.RegisterBroker, &wire.RegisterBrokerRequestHeader{BrokerName: "b", BrokerAddr: "127.0.0.1:1", ClusterName: "c", BrokerID: 0,
		HeartbeatTimeoutMillis: 30000}, nil)
	req.SetExt(ExtCompleteTopics, "true")
	if resp, err := p.Invoke(context.Background(), req); err != nil || resp.ResponseCode() != wire.Success {
		t.Fatalf("empty body: %v %v", resp, err)
	}
	regs := f.routes.registrations()
	if got := regs[len(regs)-1]; !got.Partial || len(got.Topics) != 0 || got.Timeout != 30*time.Second {
		t.Errorf("empty body registration %+v", got)
	}
}

func slicesClone(ts []TopicConfig) []TopicConfig {
	out := make([]TopicConfig, len(ts))
	copy(out, ts)
	return out
}

func TestBadRequests(t *testing.T) {
	f := startNamesrv(t, Options{})
	p := dialPeer(t, f.addr, wire.JSON)
	corrupt := func(t *testing.T) *wire.Command {
		req := registerRequest(t, "b", 0, "127.0.0.1:1", true, false, topicCfg("T", 1))
		req.Body = append([]byte(nil), req.Body...)
		req.Body[5] ^= 1
		return req
	}
	rawRegister := func(compressed bool, body []byte) func(*testing.T) *wire.Command {
		return fixed(request(wire.RegisterBroker, &wire.RegisterBrokerRequestHeader{BrokerName: "b", BrokerAddr: "127.0.0.1:1",
			ClusterName: "c", Compressed: compressed, BodyCRC32: BodyCRC32(body)}, body))
	}
	var zbuf bytes.Buffer
	zw := zlib.NewWriter(&zbuf)
	zw.Write([]byte{0, 0, 0, 2, '{', '}', 0x7f, 0xff, 0xff, 0xff}) // a huge topic count
	zw.Close()
	routeReq := fixed(request(wire.GetRouteInfoByTopic, &wire.GetRouteInfoRequestHeader{Topic: "T"}, nil))

	runExchanges(t, p, []exchange{
		{name: "route without topic", req: fixed(request(wire.GetRouteInfoByTopic, nil, nil)), code: wire.InvalidParameter, remark: `"topic"`},
		{name: "register without brokerName", code: wire.InvalidParameter, remark: "brokerName",
			req: fixed(&wire.Command{Code: int32(wire.RegisterBroker), ExtFields: map[string]string{"brokerAddr": "a:1", "clusterName": "c", "haServerAddr": "", "brokerId": "0"}})},
		{name: "register with bad brokerId", code: wire.InvalidParameter, remark: "brokerId",
			req: fixed(&wire.Command{Code: int32(wire.RegisterBroker), ExtFields: map[string]string{"brokerName": "b", "brokerAddr": "a:1", "clusterName": "c", "haServerAddr": "", "brokerId": "x"}})},
		{name: "register with negative brokerId", code: wire.InvalidParameter, remark: "brokerId",
			req: fixed(&wire.Command{Code: int32(wire.RegisterBroker), ExtFields: map[string]string{"brokerName": "b", "brokerAddr": "a:1", "clusterName": "c", "haServerAddr": "", "brokerId": "-1"}})},
		{name: "register with crc mismatch", req: corrupt, code: wire.SystemError, remark: "crc32"},
		{name: "register with bad JSON", req: rawRegister(false, []byte(`{"topicConfigSerializeWrapper":[`)), code: wire.InvalidParameter, remark: "malformed"},
		{name: "register with bad zlib", req: rawRegister(true, []byte("not zlib")), code: wire.InvalidParameter, remark: "zlib"},
		{name: "register with huge count", req: rawRegister(true, zbuf.Bytes()), code: wire.InvalidParameter, remark: "out of range"},
		{name: "nothing registered", req: routeReq, code: wire.TopicNotExist},
		{name: "unregister without brokerAddr", code: wire.InvalidParameter, remark: "brokerAddr",
			req: fixed(&wire.Command{Code: int32(wire.UnregisterBroker), ExtFields: map[string]string{"brokerName": "b", "clusterName": "c", "brokerId": "0"}})},
		{name: "delete topic without topic", req: fixed(request(wire.DeleteTopicInNamesrv, nil, nil)), code: wire.InvalidParameter, remark: "topic"},
		{name: "topics by cluster without cluster", req: fixed(request(wire.GetTopicsByCluster, nil, nil)), code: wire.InvalidParameter, remark: "cluster"},
		{name: "wipe without brokerName", req: fixed(request(wire.WipeWritePermOfBroker, nil, nil)), code: wire.InvalidParameter, remark: "brokerName"},
		{name: "add without brokerName", req: fixed(request(wire.AddWritePermOfBroker, nil, nil)), code: wire.InvalidParameter, remark: "brokerName"},
		{name: "put kv without key", code: wire.InvalidParameter, remark: "key",
			req: fixed(&wire.Command{Code: int32(wire.PutKVConfig), ExtFields: map[string]string{"namespace": "ns", "value": "v"}})},
		{name: "put kv without value", code: wire.InvalidParameter, remark: "value",
			req: fixed(&wire.Command{Code: int32(wire.PutKVConfig), ExtFields: map[string]string{"namespace": "ns", "key": "k"}})},
		{name: "get kv with empty namespace", code: wire.InvalidParameter, remark: "namespace",
			req: fixed(&wire.Command{Code: int32(wire.GetKVConfig), ExtFields: map[string]string{"namespace": "", "key": "k"}})},
		{name: "unknown code", req: fixed(&wire.Command{Code: 9999}), code: wire.RequestCodeNotSupported},
		// The server is still serving, and nothing bad was recorded.
		{name: "good registration after all that", code: wire.Success,
			req: func(t *testing.T) *wire.Command {
				return registerRequest(t, "b", 0, "127.0.0.1:1", true, false, topicCfg("T", 1))
			}},
		{name: "route", req: routeReq, code: wire.Success},
	})
	if regs := f.routes.registrations(); len(regs) != 1 {
		t.Errorf("%d registrations recorded, want 1: %+v", len(regs), regs)
	}

	f.routes.mu.Lock()
	f.routes.refuse = errors.New("stale registration")
	f.routes.mu.Unlock()
	runExchanges(t, p, []exchange{{name: "refused registration", code: wire.SystemError, remark: "register broker failed: stale registration",
		req: func(t *testing.T) *wire.Command { return registerRequest(t, "b", 0, "127.0.0.1:1", true, false) }}})
}

func TestKVRequests(t *testing.T) {
	f := startNamesrv(t, Options{})
	p := dialPeer(t, f.addr, wire.JSON)
	get := func(ns, key string) func(*testing.T) *wire.Command {
		return fixed(request(wire.GetKVConfig, &KVConfigRequestHeader{Namespace: ns, Key: key}, nil))
	}
	value := func(want string) func(*testing.T, *wire.Command) {
		return func(t *testing.T, resp *wire.Command) {
			var h GetKVConfigResponseHeader
			if err := resp.DecodeHeader(&h); err != nil || h.Value != want {
				t.Errorf("value %q %v, want %q", h.Value, err, want)
			}
		}
	}
	runExchanges(t, p, []exchange{
		{name: "get missing", req: get("ns", "k"), code: wire.QueryNotFound, remark: "Namespace: ns Key: k"},
		{name: "list missing", req: fixed(request(wire.GetKVListByNamespace, &NamespaceRequestHeader{Namespace: "ns"}, nil)), code: wire.QueryNotFound, remark: "ns"},
		{name: "put", req: fixed(request(wire.PutKVConfig, &PutKVConfigRequestHeader{Namespace: "ns", Key: "k", Value: "v1"}, nil)), code: wire.Success},
		{name: "put empty value", req: fixed(request(wire.PutKVConfig, &PutKVConfigRequestHeader{Namespace: "ns", Key: "e", Value: ""}, nil)), code: wire.Success},
		{name: "overwrite", req: fixed(request(wire.PutKVConfig, &PutKVConfigRequestHeader{Namespace: "ns", Key: "k", Value: "v2"}, nil)), code: wire.Success},
		{name: "get", req: get("ns", "k"), code: wire.Success, check: value("v2")},
		{name: "get empty", req: get("ns", "e"), code: wire.Success, check: value("")},
		{name: "list", req: fixed(request(wire.GetKVListByNamespace, &NamespaceRequestHeader{Namespace: "ns"}, nil)), code: wire.Success,
			body: `{"table":{"e":"","k":"v2"}}`},
		{name: "delete", req: fixed(request(wire.DeleteKVConfig, &KVConfigRequestHeader{Namespace: "ns", Key: "k"}, nil)), code: wire.Success},
		{name: "delete again", req: fixed(request(wire.DeleteKVConfig, &KVConfigRequestHeader{Namespace: "ns", Key: "k"}, nil)), code: wire.Success},
		{name: "get deleted", req: get("ns", "k"), code: wire.QueryNotFound},
	})
}

func TestOrderTopicConf(t *testing.T) {
	f := startNamesrv(t, Options{OrderTopicConf: true})
	p := dialPeer(t, f.addr, wire.JSON)
	f.kv.Put(OrderTopicConfigNamespace, "T", "broker-a:4")
	runExchanges(t, p, []exchange{
		{name: "register gets the order config", code: wire.Success,
			req: func(t *testing.T) *wire.Command {
				return registerRequest(t, "broker-a", 0, "127.0.0.1:1", true, false, topicCfg("T", 4))
			},
			body: `{"table":{"T":"broker-a:4"}}`},
		{name: "route carries orderTopicConf", req: fixed(request(wire.GetRouteInfoByTopic, &wire.GetRouteInfoRequestHeader{Topic: "T"}, nil)), code: wire.Success,
			check: func(t *testing.T, resp *wire.Command) {
				var raw map[string]json.RawMessage
				json.Unmarshal(resp.Body, &raw)
				if string(raw["orderTopicConf"]) != `"broker-a:4"` {
					t.Errorf("route %s", resp.Body)
				}
			}},
	})
}

func TestConnClosedUnregisters(t *testing.T) {
	f := startNamesrv(t, Options{})
	p1 := dialPeer(t, f.addr, wire.JSON)
	p2 := dialPeer(t, f.addr, wire.JSON)
	ctx := context.Background()
	for _, r := range []struct {
		p    *peer.Peer
		name string
		addr string
	}{{p1, "a", "127.0.0.1:1"}, {p2, "b", "127.0.0.1:2"}} {
		if resp, err := r.p.Invoke(ctx, registerRequest(t, r.name, 0, r.addr, true, false, topicCfg("T", 1))); err != nil || resp.ResponseCode() != wire.Success {
			t.Fatalf("register %s: %v %v", r.name, resp, err)
		}
	}
	p1.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		rd, ok := f.routes.Route("T")
		if ok && len(rd.BrokerDatas) == 1 && rd.BrokerDatas[0].BrokerName == "b" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker a still routed after its connection closed: %+v", rd)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A member that re-registered over another connection survives the
	// close of the first one.
	p3 := dialPeer(t, f.addr, wire.JSON)
	if resp, err := p3.Invoke(ctx, registerRequest(t, "b", 0, "127.0.0.1:2", true, false, topicCfg("T", 1))); err != nil || resp.ResponseCode() != wire.Success {
		t.Fatalf("re-register b: %v %v", resp, err)
	}
	p2.Close()
	time.Sleep(100 * time.Millisecond)
	if _, ok := f.routes.Route("T"); !ok {
		t.Error("b unregistered by the close of a connection it no longer uses")
	}
}
