package auth

import (
	"net/netip"
	"testing"

	"github.com/karmanmq/karman/engine/hook/rmqauth"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// TestSignerSetHeader checks that a send request whose header was given
// with SetHeader is signed as the same request with its fields in the
// map, keeps its header out of the map, and verifies on the broker's
// side once encoded and decoded, deferred or not; signed again after its
// header changed, it verifies again.
func TestSignerSetHeader(t *testing.T) {
	const ak, sk = "app", "app-secret"
	h := &wire.SendMessageRequestHeader{ProducerGroup: "pg", Topic: "orders", QueueID: 3,
		BornTimestamp: 1700000000000, Properties: "UNIQ_KEY\x01abc\x02", BrokerName: "broker-a"}
	s := NewSigner(ak, sk)
	lazy := wire.NewRequest(wire.SendMessage, nil)
	lazy.Body = []byte("hello")
	for _, queue := range []int32{3, 5} {
		h.QueueID = queue
		lazy.SetHeader(h)
		s.Sign(lazy)
		if lazy.ExtFields != nil {
			t.Fatalf("queue %d: signing built the map %v", queue, lazy.ExtFields)
		}
		eager := wire.NewRequest(wire.SendMessage, nil)
		eager.Body = lazy.Body
		eager.EncodeHeader(h)
		Sign(eager, ak, sk)
		want := rmqauth.SignRemoting(rmqauth.RemotingContent(eager.ExtFields, eager.Body), sk)
		if got := eager.ExtFields[rmqauth.FieldSignature]; got != want {
			t.Fatalf("queue %d: map signed %q, want %q", queue, got, want)
		}
		frame, err := lazy.AppendTo(nil, wire.JSON)
		if err != nil {
			t.Fatal(err)
		}
		if dec, err := wire.DecodeFrame(frame); err != nil || dec.ExtFields[rmqauth.FieldSignature] != want {
			t.Fatalf("queue %d: sent %v (%v), want signature %q", queue, dec.ExtFields, err, want)
		}
		for _, deferred := range []bool{false, true} {
			req, err := wire.DecodeOptions{DeferExtFields: deferred}.DecodeFrame(frame)
			if err != nil {
				t.Fatal(err)
			}
			cr := Credentials(req, netip.AddrPort{}, false)
			if cr.AccessKey != ak {
				t.Fatalf("access key %q", cr.AccessKey)
			}
			if err := rmqauth.Verify(cr, sk); err != nil {
				t.Fatalf("queue %d deferred %v: %v", queue, deferred, err)
			}
			if err := rmqauth.Verify(cr, "other-secret"); err == nil {
				t.Fatal("verified with another secret")
			}
			Release(cr)
		}
	}
}

// BenchmarkCredentials is the broker's work per signed send besides the
// HMAC: the ACL fields and the signed content read from a decoded 1 KiB
// send, as the Go client sends it, and given back.
func BenchmarkCredentials(b *testing.B) {
	h := &wire.SendMessageRequestHeader{ProducerGroup: "bench_producer", Topic: "BenchTopic", DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: 3, BornTimestamp: 1700000000000, MaxReconsumeTimes: new(int32),
		Properties: "UNIQ_KEY\x010123456789ABCDEF0123456789ABCDEF\x02", BrokerName: "broker-a"}
	req := wire.NewRequest(wire.SendMessage, nil)
	req.Version = 317
	req.SetHeader(h)
	req.Body = make([]byte, 1024)
	NewSigner("bench", "bench-secret").Sign(req)
	frame, err := req.AppendTo(nil, wire.JSON)
	if err != nil {
		b.Fatal(err)
	}
	in, err := wire.DecodeOptions{DeferExtFields: true}.DecodeFrame(frame)
	if err != nil {
		b.Fatal(err)
	}
	addr := netip.MustParseAddrPort("127.0.0.1:40000")
	b.ReportAllocs()
	for b.Loop() {
		cr := Credentials(in, addr, false)
		if cr.Algorithm != rmqauth.AlgorithmRemoting || len(cr.Content) < len(req.Body) {
			b.Fatalf("credentials %+v", cr)
		}
		Release(cr)
	}
}
