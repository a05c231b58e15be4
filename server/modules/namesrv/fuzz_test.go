package namesrv

import (
	"context"
	"testing"
	"time"

	remoting "github.com/karmanmq/karman/protocol/remoting/namesrv"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/remotingtest"
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

// FuzzRequests sends arbitrary headers and bodies with the codes the name
// server serves, to the front-end `karman namesrv` runs (the real route
// table). Every request must be answered, and no handler may panic
// (remotingtest.MustAnswer).
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
		f.Add(remotingtest.CodeIndex(fuzzCodes, wire.RegisterBroker), remotingtest.ExtLines(h), body)
	}
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.GetRouteInfoByTopic), "topic=T\n", []byte(nil))
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.UnregisterBroker), "brokerName=b\nbrokerAddr=127.0.0.1:10911\nclusterName=c\nbrokerId=0\n", []byte(nil))
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.PutKVConfig), "namespace=ORDER_TOPIC_CONFIG\nkey=T\nvalue=b:4\n", []byte(nil))
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.GetKVListByNamespace), "namespace=ORDER_TOPIC_CONFIG\n", []byte(nil))
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.WipeWritePermOfBroker), "brokerName=b\n", []byte(nil))
	f.Add(remotingtest.CodeIndex(fuzzCodes, wire.GetTopicsByCluster), "cluster=c\n", []byte(nil))

	// One name server for every input, so that inputs build on the
	// routes earlier ones registered.
	addr, _ := startFrontend(f)
	p, err := peer.Dial(context.Background(), addr, peer.Options{RequestTimeout: 10 * time.Second})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { p.Close() })
	f.Fuzz(func(t *testing.T, code uint8, header string, body []byte) {
		remotingtest.MustAnswer(t, p, fuzzCodes[int(code)%len(fuzzCodes)], header, body)
	})
}
