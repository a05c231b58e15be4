package plugins

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/plugins/internal/pluginpb"
)

// batch32 returns 32 messages of 1 KiB to T, each with a tag.
func batch32() []*message.Message {
	ms := make([]*message.Message, 32)
	for i := range ms {
		ms[i] = &message.Message{Topic: "T", Body: bytes.Repeat([]byte("x"), 1024)}
		ms[i].SetTags("bench")
	}
	return ms
}

// BenchmarkSendBatch32 is produce throughput through engine.SendBatch in
// batches of 32 messages of 1 KiB: with no hook, with one plugin store
// interceptor that checks a property of each message (headerauth), and
// with one that changes the properties of each (testplugin).
func BenchmarkSendBatch32(b *testing.B) {
	for _, bc := range []struct{ name, spec string }{
		{"none", ""},
		{"plugin", "bench=" + program("headerauth") + ",header=TAGS,allow=bench"},
		{"plugin-changes", "bench=" + program("testplugin")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var hooks []any
			if bc.spec != "" {
				hooks = load(b, bc.spec, Options{}).Hooks()
			}
			e := openEngine(b, b.TempDir(), hooks)
			ms := batch32()
			ctx := context.Background()
			b.SetBytes(32 * 1024)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.SendBatch(ctx, ms, engine.AnyQueue); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)*32/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkStoreCall32 is the plugin round trip alone: one BeforeStore
// call of a batch of 32 to headerauth, the engine left out.
func BenchmarkStoreCall32(b *testing.B) {
	p := load(b, "bench="+program("headerauth")+",header=TAGS,allow=bench", Options{})
	var h hook.BeforeStore
	for _, v := range p.Hooks() {
		if s, ok := v.(hook.BeforeStore); ok {
			h = s
		}
	}
	ms := batch32()
	for _, m := range ms {
		m.LoadProperties()
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		sb := &hook.StoreBatch{Topic: "T", Queue: -1, Messages: ms}
		if err := h.BeforeStore(ctx, sb); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundTrip is the floor under a plugin call: an empty-handed
// gRPC round trip to the plugin process (Configure of headerauth, which
// does no work), over go-plugin's mutual-TLS connection.
func BenchmarkRoundTrip(b *testing.B) {
	p := load(b, "bench="+program("headerauth")+",allow=x", Options{})
	req := &pluginpb.ConfigureRequest{Name: "bench", Config: map[string]string{"allow": "x"}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := p.call(ctx, time.Second, func(ctx context.Context, c pluginpb.PluginClient) error {
			_, err := c.Configure(ctx, req)
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
}
