package remoting

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/bench"
	"github.com/karmanmq/karman/bench/internal/karmantest"
	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/acl"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

func TestPhases(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flush engine.FlushMode
		conns int
	}{
		{"async-flush", engine.FlushAsync, 0},
		{"sync-flush-shared-conn", engine.FlushSync, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := karmantest.Start(t, tc.flush)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			g, err := New(ctx, Options{NameServer: c.NameServer, Connections: tc.conns, Queues: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			targets := []bench.Target{{System: "karman", Client: "karman", Generator: g}}
			var out bytes.Buffer
			p := bench.NewPrinter(&out, true)
			runs := []struct {
				mode bench.Mode
				w    bench.Workload
				want bench.Phase
			}{
				{bench.ModeProduce, bench.Workload{Topic: "P", Count: 300, Size: 100, Producers: 3}, bench.PhaseProduce},
				{bench.ModeProduce, bench.Workload{Topic: "P", Count: 1000, Size: 100, Producers: 2, Inflight: 50}, bench.PhaseProduceAsync},
				{bench.ModeConsume, bench.Workload{Topic: "P", Count: 1001, Size: 100, Producers: 2, Batch: 32}, bench.PhaseConsume},
				{bench.ModeConsume, bench.Workload{Topic: "C", Count: 500, Size: 10, Producers: 1, Consumers: 3, Batch: 7}, bench.PhaseConsume},
			}
			for _, r := range runs {
				if err := bench.Run(ctx, r.mode, r.w, targets, p); err != nil {
					t.Fatalf("%s: %v", r.want, err)
				}
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != len(runs) {
				t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(runs), out.String())
			}
			for i, line := range lines {
				var res bench.Result
				if err := json.Unmarshal([]byte(line), &res); err != nil {
					t.Fatalf("line %d: %v: %s", i, err, line)
				}
				w := runs[i].w
				if res.System != "karman" || res.Phase != runs[i].want || res.Count != w.Count || res.Size != w.Size || res.MsgsPerSec <= 0 || res.P50us <= 0 || res.P99us < res.P50us {
					t.Errorf("line %d: %s", i, line)
				}
			}
			// Every acknowledged message is stored: 300 + 1000 + 1001 in P.
			var stored int64
			for q := range int32(4) {
				n, err := c.Engine.MaxOffset("P", q)
				if err != nil {
					t.Fatal(err)
				}
				stored += n
			}
			if stored != 2301 {
				t.Errorf("topic P holds %d messages, want 2301", stored)
			}
		})
	}
}

func TestCountRecords(t *testing.T) {
	rec := func(n int) []byte {
		b := make([]byte, n)
		b[0], b[1], b[2], b[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
		return b
	}
	body := append(append(rec(10), rec(200)...), rec(4)...)
	if n, err := countRecords(body); n != 3 || err != nil {
		t.Errorf("countRecords = %d, %v; want 3", n, err)
	}
	if n, err := countRecords(nil); n != 0 || err != nil {
		t.Errorf("empty body: %d, %v", n, err)
	}
	for _, bad := range [][]byte{body[:len(body)-1], {0, 0, 0, 2, 0, 0}, {0, 0}} {
		if _, err := countRecords(bad); err == nil {
			t.Errorf("countRecords(%x) did not fail", bad)
		}
	}
}

func TestSenderKeysAreUnique(t *testing.T) {
	qs := []Queue{{"b", "x:1", 0}, {"b", "x:1", 1}, {"b", "x:1", 2}}
	s := newSender("g", "T", []byte("x"), qs, 1)
	seen := map[string]bool{}
	for i := range 100 {
		q := s.prepare(time.Now())
		if want := qs[(1+i)%3]; q != want {
			t.Fatalf("message %d went to %v, want %v", i, q, want)
		}
		// Read the request as it goes out.
		frame, err := s.cmd.AppendTo(nil, wire.JSON)
		if err != nil {
			t.Fatal(err)
		}
		sent, err := wire.DecodeFrame(frame)
		if err != nil {
			t.Fatal(err)
		}
		p := sent.ExtFields["properties"]
		if !strings.HasPrefix(p, uniqKeyPrefix) || len(p) != len(uniqKeyPrefix)+33 || seen[p] {
			t.Fatalf("message %d: properties %q", i, p)
		}
		if qid := sent.ExtFields["queueId"]; qid != strconv.Itoa(int(q.ID)) || sent.ExtFields["bname"] != q.Broker {
			t.Fatalf("message %d for queue %v: queueId %q, bname %q", i, q, qid, sent.ExtFields["bname"])
		}
		seen[p] = true
	}
}

// TestSigned: with credentials every request is signed, so a broker
// guarded by an ACL takes the sends and pulls of a user allowed them, and
// refuses a wrong secret.
func TestSigned(t *testing.T) {
	a := acl.New(acl.Options{})
	c := karmantest.StartHooked(t, engine.FlushAsync, a)
	if err := a.Attach(c.Engine); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateUser(acl.User{Name: "root", Secret: "root-secret", Type: acl.Super}); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateUser(acl.User{Name: "bench", Secret: "bench-secret", Policies: []acl.Entry{{Resource: "*", Actions: []string{"All"}, Decision: acl.Allow}}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run := func(secret string, mode bench.Mode, w bench.Workload) error {
		g, err := New(ctx, Options{NameServer: c.NameServer, Queues: 4, AccessKey: "bench", SecretKey: secret})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		var out bytes.Buffer
		return bench.Run(ctx, mode, w, []bench.Target{{System: "karman", Client: "karman", Generator: g}}, bench.NewPrinter(&out, true))
	}
	if err := run("bench-secret", bench.ModeProduce, bench.Workload{Topic: "S", Count: 200, Size: 100, Producers: 2, Inflight: 8}); err != nil {
		t.Fatalf("signed produce: %v", err)
	}
	if err := run("bench-secret", bench.ModeConsume, bench.Workload{Topic: "S", Count: 200, Size: 100, Producers: 1, Batch: 16}); err != nil {
		t.Fatalf("signed consume: %v", err)
	}
	if err := run("wrong-secret", bench.ModeProduce, bench.Workload{Topic: "S", Count: 10, Size: 100, Producers: 1}); err == nil || !strings.Contains(err.Error(), "signature mismatch") {
		t.Fatalf("produce with a wrong secret: %v", err)
	}
}

// BenchmarkPrepareSend is the load generator's own work per send before
// the write: a new UNIQ_KEY and born time, the signature when signed,
// and the frame encoded, as a 1 KiB send costs it.
func BenchmarkPrepareSend(b *testing.B) {
	queues := []Queue{{Addr: "127.0.0.1:10911", Broker: "broker-a", ID: 0}, {Addr: "127.0.0.1:10911", Broker: "broker-a", ID: 1}}
	body := bytes.Repeat([]byte{'k'}, 1024)
	for _, tc := range []struct {
		name   string
		signed bool
	}{{"plain", false}, {"signed", true}} {
		b.Run(tc.name, func(b *testing.B) {
			g := &Generator{}
			if tc.signed {
				g.o.AccessKey, g.o.SecretKey = "bench", "bench-secret"
			}
			s := newSender(DefaultProducerGroup, "bench-topic", body, queues, 0)
			s.sign = g.signer()
			var buf []byte
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				s.prepare(time.Now())
				var err error
				if buf, err = s.cmd.AppendTo(buf[:0], wire.JSON); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
