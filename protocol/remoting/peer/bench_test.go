package peer

import (
	"context"
	"testing"

	"github.com/karmanmq/karman/protocol/remoting/wire"
)

func benchRequest() *wire.Command {
	req := wire.NewRequest(wire.SendMessage, map[string]string{
		"producerGroup": "pg", "topic": "TopicA", "queueId": "1", "sysFlag": "0",
		"bornTimestamp": "1700000000000", "flag": "0", "properties": "UNIQ_KEY\x01AB\x02WAIT\x01true\x02",
		"reconsumeTimes": "0", "unitMode": "false", "maxReconsumeTimes": "0", "defaultTopic": "TBW102",
		"defaultTopicQueueNums": "4", "batch": "false", "bname": "broker-a"})
	req.Body = make([]byte, 256)
	return req
}

// okResponse answers like a broker's send: a small header, no body.
func okResponse(sc *testConn, req *wire.Command) {
	resp := wire.NewResponse(req, wire.Success, "")
	resp.ExtFields = map[string]string{"msgId": "C0A8000A00002A9F0000000000000000", "queueId": "1", "queueOffset": "42"}
	sc.send(resp)
}

// BenchmarkInvokeSequential measures one request at a time (round-trip
// latency over loopback, server in the same process).
func BenchmarkInvokeSequential(b *testing.B) {
	s := startServer(&testing.T{}, okResponse)
	defer s.stop()
	c, err := Dial(context.Background(), s.addr(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := benchRequest()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Invoke(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInvokePipelined measures throughput with many requests in
// flight on one connection (64 goroutines per CPU).
func BenchmarkInvokePipelined(b *testing.B) {
	for _, typ := range []wire.SerializeType{wire.JSON, wire.RocketMQ} {
		b.Run(typ.String(), func(b *testing.B) {
			s := startServer(&testing.T{}, okResponse)
			defer s.stop()
			c, err := Dial(context.Background(), s.addr(), Options{SerializeType: typ})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			req := benchRequest()
			b.ReportAllocs()
			b.SetParallelism(64)
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					if _, err := c.Invoke(ctx, req); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
		})
	}
}
