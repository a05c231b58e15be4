package broker

import (
	"context"
	"net"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/acl"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/auth"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// benchBroker starts an engine, a broker and a server on a loopback port,
// with a topic of 8 queues, and returns a connection to it.
func benchBroker(b *testing.B, hooks ...any) *peer.Peer {
	b.Helper()
	eng, err := engine.Open(b.TempDir(), &engine.Options{AutoCreateTopics: true, SegmentSize: 256 << 20, Hooks: hooks})
	if err != nil {
		b.Fatal(err)
	}
	br := New(eng, Options{AutoCreateTopics: true})
	mux := server.NewMux()
	br.Register(mux)
	srv := server.New(mux, server.Options{Busy: br.Busy, OnClose: br.OnClose})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	if err := br.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	for _, h := range hooks {
		if a, ok := h.(*acl.ACL); ok {
			benchUsers(b, a, eng)
		}
	}
	go srv.Serve(ln)
	p, err := peer.Dial(context.Background(), ln.Addr().String(), peer.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		p.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		br.Close()
		eng.Close()
	})
	return p
}

// benchSend returns a SEND_MESSAGE request as the Go client sends it: 1
// KiB body, a UNIQ_KEY, V1 field names.
func benchSend(queue int32, i int) *wire.Command {
	h := &wire.SendMessageRequestHeader{
		ProducerGroup: "bench_producer", Topic: "BenchTopic", DefaultTopic: "TBW102", DefaultTopicQueueNums: 8,
		QueueID: queue, BornTimestamp: time.Now().UnixMilli(), MaxReconsumeTimes: new(int32), BrokerName: DefaultBrokerName,
		Properties: string(message.AppendProperties(nil, map[string]string{message.PropertyUniqKey: "0A0B0C0D" + strconv.Itoa(1e9+i)})),
	}
	req := wire.NewRequest(wire.SendMessage, nil)
	req.Version = 317
	req.EncodeHeader(h)
	req.Body = make([]byte, 1024)
	return req
}

// benchUsers attaches a to eng with 300 users of one policy each, the
// bench's own (bench, allowed everything) among them.
func benchUsers(b *testing.B, a *acl.ACL, eng *engine.Engine) {
	if err := a.Attach(eng); err != nil {
		b.Fatal(err)
	}
	if err := a.CreateUser(acl.User{Name: "root", Secret: "root-secret", Type: acl.Super}); err != nil {
		b.Fatal(err)
	}
	if err := a.CreateUser(acl.User{Name: "bench", Secret: "bench-secret", Policies: []acl.Entry{{Resource: "*", Actions: []string{"All"}, Decision: acl.Allow}}}); err != nil {
		b.Fatal(err)
	}
	for i := range 298 {
		n := "user" + strconv.Itoa(i)
		if err := a.CreateUser(acl.User{Name: n, Secret: "secret" + n, Policies: []acl.Entry{{Resource: "Topic:t" + n, Actions: []string{"Pub", "Sub"}, Decision: acl.Allow}}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendPipelined measures sends over one connection with 256 in
// flight, client and server in one process: allocations are both sides'.
// ACL: the same with an ACL of 300 users, the requests signed once
// beforehand (the server's cost of authentication and authorization).
func BenchmarkSendPipelined(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchSendPipelined(b, false) })
	b.Run("ACL", func(b *testing.B) { benchSendPipelined(b, true) })
}

func benchSendPipelined(b *testing.B, withACL bool) {
	var hooks []any
	if withACL {
		hooks = append(hooks, acl.New(acl.Options{}))
	}
	p := benchBroker(b, hooks...)
	sign := func(req *wire.Command) *wire.Command {
		if withACL {
			auth.Sign(req, "bench", "bench-secret")
		}
		return req
	}
	ctx := context.Background()
	if resp, err := p.Invoke(ctx, sign(benchSend(0, 0))); err != nil || resp.ResponseCode() != wire.Success {
		b.Fatal(resp, err)
	}
	reqs := make([]*wire.Command, 64)
	for i := range reqs {
		reqs[i] = sign(benchSend(int32(i%8), i))
	}
	slots := make(chan struct{}, 256)
	var wg sync.WaitGroup
	done := func(resp *wire.Command, err error) {
		if err != nil || resp.ResponseCode() != wire.Success {
			b.Error(resp, err)
		}
		<-slots
		wg.Done()
	}
	b.SetBytes(1024)
	b.ReportAllocs()
	cpu0 := processCPU()
	i := 0
	for b.Loop() {
		slots <- struct{}{}
		wg.Add(1)
		if err := p.InvokeAsync(ctx, reqs[i%len(reqs)], done); err != nil {
			b.Fatal(err)
		}
		i++
	}
	wg.Wait()
	// The process's CPU time per send: steadier than wall time on a
	// machine that runs other work.
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU returns the CPU time, user and system, this process used so
// far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSendSync measures one send at a time over one connection.
// ACL: the same with an ACL of 300 users, the request signed once
// beforehand (the server's cost of authentication and authorization);
// signed: the signed request to a broker without the ACL (what the
// signature's two fields cost a broker that ignores them).
func BenchmarkSendSync(b *testing.B) {
	b.Run("plain", func(b *testing.B) { benchSendSync(b, false, false) })
	b.Run("signed", func(b *testing.B) { benchSendSync(b, false, true) })
	b.Run("ACL", func(b *testing.B) { benchSendSync(b, true, true) })
}

func benchSendSync(b *testing.B, withACL, signed bool) {
	var hooks []any
	if withACL {
		hooks = append(hooks, acl.New(acl.Options{}))
	}
	p := benchBroker(b, hooks...)
	ctx := context.Background()
	req := benchSend(0, 0)
	if signed {
		auth.Sign(req, "bench", "bench-secret")
	}
	b.SetBytes(1024)
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		if resp, err := p.Invoke(ctx, req); err != nil || resp.ResponseCode() != wire.Success {
			b.Fatal(resp, err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}
