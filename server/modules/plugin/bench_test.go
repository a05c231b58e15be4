package plugin_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// BenchmarkProduceBatch32 is produce throughput end to end: RocketMQ Go
// producers (one client, GOMAXPROCS×4 goroutines) sending batches of 32
// messages of 1 KiB to a server over loopback, with no plugin and with
// one process plugin whose store interceptor changes the properties of
// every message (the plugins module's test plugin), called once per
// batch.
func BenchmarkProduceBatch32(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "testplugin")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/karmanmq/karman/plugins/internal/testplugin").CombinedOutput(); err != nil {
		b.Fatalf("build testplugin: %v\n%s", err, out)
	}
	rlog.SetLogLevel("error")
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"none", nil},
		{"plugin", []string{"--plugin", "bench=" + bin}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			srv, err := newServer(b, bc.args...)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if err := srv.Start(ctx); err != nil {
				b.Fatal(err)
			}
			defer srv.Stop(ctx)
			p, err := producer.NewDefaultProducer(
				producer.WithNsResolver(primitive.NewPassthroughResolver([]string{srv.Addr("namesrv").String()})),
				producer.WithGroupName("bench"),
				producer.WithInstanceName("bench-"+bc.name),
				producer.WithRetry(0),
				producer.WithSendMsgTimeout(10*time.Second),
			)
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Start(); err != nil {
				b.Fatal(err)
			}
			defer p.Shutdown()
			batch := make([]*primitive.Message, 32)
			for i := range batch {
				batch[i] = primitive.NewMessage("Bench", bytes.Repeat([]byte("x"), 1024))
			}
			if _, err := p.SendSync(ctx, batch...); err != nil { // the topic and its route
				b.Fatal(err)
			}
			var failed atomic.Int64
			b.SetBytes(32 * 1024)
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := p.SendSync(ctx, batch...); err != nil {
						failed.Add(1)
					}
				}
			})
			b.ReportMetric(float64(b.N)*32/b.Elapsed().Seconds(), "msgs/s")
			if n := failed.Load(); n > 0 {
				b.Fatalf("%d batches failed", n)
			}
		})
	}
}
