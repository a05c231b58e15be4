package engine

import (
	"bytes"
	"context"
	"testing"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
)

type noopStore struct{}

func (noopStore) BeforeStore(context.Context, *hook.StoreBatch) error { return nil }

type noopDeliver struct{}

func (noopDeliver) BeforeDeliver(context.Context, *hook.DeliverBatch) error { return nil }

// hookCases are the hook set-ups the hook benchmarks compare.
var hookCases = []struct {
	name  string
	hooks []any
}{
	{"none", nil},
	{"store-noop", []any{noopStore{}}},
	{"deliver-noop", []any{noopDeliver{}}},
}

// BenchmarkHooksSend is BenchmarkSend with no hook, one no-op store hook
// and one no-op delivery hook: what a hook point costs the send path.
func BenchmarkHooksSend(b *testing.B) {
	for _, hc := range hookCases {
		b.Run(hc.name, func(b *testing.B) {
			e := benchEngine(b, &Options{Hooks: hc.hooks})
			m := &message.Message{Topic: "B", Body: bytes.Repeat([]byte("x"), 1024)}
			m.SetTags("bench")
			ctx := context.Background()
			b.SetBytes(1024)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Send(ctx, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHooksPull32 is BenchmarkPull32 with the same three set-ups:
// what a hook point costs the pull path.
func BenchmarkHooksPull32(b *testing.B) {
	for _, hc := range hookCases {
		b.Run(hc.name, func(b *testing.B) { benchPull32(b, &Options{Hooks: hc.hooks}, 8*1024, "bench") })
	}
}
