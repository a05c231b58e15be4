package plugin_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// BenchmarkProduceBatch32 is produce throughput end to end: RocketMQ Go
// producers (one client, GOMAXPROCS×4 goroutines) sending batches of 32
// messages of 1 KiB to a server over loopback, with no plugin and with
// one process plugin whose store interceptor (the plugins module's test
// plugin) checks a property of every message or changes the properties
// of every message, called once per batch (batches of concurrent sends
// go to the plugin together).
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
		{"plugin-checks", []string{"--plugin", "bench=" + bin + ",check=tenant"}},
		{"plugin-changes", []string{"--plugin", "bench=" + bin}},
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
				batch[i].WithProperty("tenant", "bench")
			}
			if _, err := p.SendSync(ctx, batch...); err != nil { // the topic and its route
				b.Fatal(err)
			}
			var failed atomic.Int64
			b.SetBytes(32 * 1024)
			b.SetParallelism(4)
			cpu0 := cpuTime(b)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := p.SendSync(ctx, batch...); err != nil {
						failed.Add(1)
					}
				}
			})
			b.ReportMetric(float64(b.N)*32/b.Elapsed().Seconds(), "msgs/s")
			// CPU per batch of this process (producers and server) and
			// its children (the plugin): on a shared machine it varies
			// less than throughput, and where the CPUs are the limit,
			// throughputs go as its inverse.
			b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
			if n := failed.Load(); n > 0 {
				b.Fatalf("%d batches failed", n)
			}
		})
	}
}

// cpuTime is the user and system time of this process and of its child
// processes still running (read from /proc, where a child's stat has
// this process as its parent).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	total := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	self := os.Getpid()
	for _, f := range stats {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue // gone meanwhile
		}
		// Fields after the command name, which is in parentheses and
		// may hold spaces: state, ppid, ... utime (14), stime (15).
		fs := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
		if ppid, _ := strconv.Atoi(fs[1]); ppid != self {
			continue
		}
		utime, _ := strconv.ParseInt(fs[11], 10, 64)
		stime, _ := strconv.ParseInt(fs[12], 10, 64)
		total += time.Duration(utime+stime) * 10 * time.Millisecond // 100 ticks a second
	}
	return total
}
