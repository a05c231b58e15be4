package namesrv

import (
	"context"
	"strings"
	"testing"
	"time"

	remoting "github.com/karmanmq/karman/protocol/remoting/namesrv"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// fuzzCodes are the requests the name server serves.
var fuzzCodes = []wire.RequestCode{
	wire.GetRouteInfoByTopic, wire.RegisterBroker, wire.UnregisterBroker,
	wire.GetBrokerClusterInfo, wire.GetTopicsByCluster, wire.GetAllTopicListFromNameServer,
	wire.DeleteTopicInNamesrv, wire.PutKVConfig, wire.GetKVConfig, wire.DeleteKVConfig,
	wire.GetKVListByNamespace, wire.GetSystemTopicListFromNS,
	wire.WipeWritePermOfBroker, wire.AddWritePermOfBroker,
}

func fuzzCode(code wire.RequestCode) uint8 {
	for i, c := range fuzzCodes {
		if c == code {
			return uint8(i)
		}
	}
	panic("code not fuzzed: " + code.String())
}

// headerLines writes h's extFields as "key=value" lines, the form
// FuzzRequests reads them in.
func headerLines(h wire.Header) string {
	ext := map[string]string{}
	h.EncodeFields(ext)
	var b strings.Builder
	for k, v := range ext {
		b.WriteString(k + "=" + v + "\n")
	}
	return b.String()
}

// FuzzRequests sends arbitrary headers and bodies with the codes the name
// server serves, to the front-end `karman namesrv` runs (the real route
// table). Every request must be answered, and no handler may panic (the
// connection's reader turns a panic into SYSTEM_ERROR "handler
// panic: ...").
func FuzzRequests(f *testing.F) {
	topics := &remoting.RegisterBrokerBody{Topics: []remoting.TopicConfig{
		{TopicName: "T", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6, Attributes: map[string]string{"+message.type": "FIFO"}},
		{TopicName: "U", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 4, Order: true},
	}}
	for _, compressed := range []bool{false, true} {
		body, err := topics.Encode(compressed)
		if err != nil {
			f.Fatal(err)
		}
		h := &wire.RegisterBrokerRequestHeader{BrokerName: "b", BrokerAddr: "127.0.0.1:10911", ClusterName: "c",
			HAServerAddr: "127.0.0.1:10912", Compressed: compressed, BodyCRC32: remoting.BodyCRC32(body)}
		f.Add(fuzzCode(wire.RegisterBroker), headerLines(h), body)
	}
	f.Add(fuzzCode(wire.GetRouteInfoByTopic), "topic=T\n", []byte(nil))
	f.Add(fuzzCode(wire.UnregisterBroker), "brokerName=b\nbrokerAddr=127.0.0.1:10911\nclusterName=c\nbrokerId=0\n", []byte(nil))
	f.Add(fuzzCode(wire.PutKVConfig), "namespace=ORDER_TOPIC_CONFIG\nkey=T\nvalue=b:4\n", []byte(nil))
	f.Add(fuzzCode(wire.GetKVListByNamespace), "namespace=ORDER_TOPIC_CONFIG\n", []byte(nil))
	f.Add(fuzzCode(wire.WipeWritePermOfBroker), "brokerName=b\n", []byte(nil))
	f.Add(fuzzCode(wire.GetTopicsByCluster), "cluster=c\n", []byte(nil))

	// One name server for every input, so that inputs build on the
	// routes earlier ones registered.
	addr, _ := startFrontend(f)
	p, err := peer.Dial(context.Background(), addr, peer.Options{RequestTimeout: 10 * time.Second})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { p.Close() })
	f.Fuzz(func(t *testing.T, code uint8, header string, body []byte) {
		ext := map[string]string{}
		for line := range strings.Lines(header) {
			if k, v, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "="); ok {
				ext[k] = v
			}
		}
		req := wire.NewRequest(fuzzCodes[int(code)%len(fuzzCodes)], ext)
		req.Body = body
		resp, err := p.Invoke(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: no answer: %v", req.RequestCode(), err)
		}
		if resp.ResponseCode() == wire.SystemError && strings.HasPrefix(resp.Remark, "handler panic") {
			t.Fatalf("%s: %s", req.RequestCode(), resp.Remark)
		}
	})
}
