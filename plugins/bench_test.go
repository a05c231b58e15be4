package plugins

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
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

// BenchmarkStoreCall32Parallel is BeforeStore calls of batches of 32 to
// testplugin, checking a property of every message or changing the
// properties of every message, from 8 callers at once: how many batches
// a plugin takes per second when the broker has several in flight, and
// the CPU time each batch costs on both sides.
func BenchmarkStoreCall32Parallel(b *testing.B) {
	for _, bc := range []struct{ name, config string }{
		{"checks", ",check=tenant"},
		{"changes", ""},
	} {
		b.Run(bc.name, func(b *testing.B) { benchStoreCall32Parallel(b, bc.config) })
	}
}

func benchStoreCall32Parallel(b *testing.B, config string) {
	p := load(b, "bench="+program("testplugin")+config, Options{})
	var h hook.BeforeStore
	for _, v := range p.Hooks() {
		if s, ok := v.(hook.BeforeStore); ok {
			h = s
		}
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.SetParallelism(4)
	cpu := startCPU(b, p)
	calls := p.calls.Load()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ms := batch32()
		for _, m := range ms {
			m.SetProperty("tenant", "bench")
		}
		for pb.Next() {
			sb := &hook.StoreBatch{Topic: "T", Queue: -1, Messages: ms}
			if err := h.BeforeStore(ctx, sb); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "batches/s")
	b.ReportMetric(float64(b.N)/float64(p.calls.Load()-calls), "batches/call")
	cpu.report(b)
}

// cpuUse measures the CPU time this process and a plugin's process spend
// during a benchmark, to report it per operation: unlike throughput on a
// shared machine, it does not depend on what else runs.
type cpuUse struct {
	pid        int
	self, plug time.Duration
}

func startCPU(b *testing.B, p *Plugin) *cpuUse {
	p.mu.Lock()
	pid := p.client.ReattachConfig().Pid
	p.mu.Unlock()
	c := &cpuUse{pid: pid}
	c.self, c.plug = selfCPU(b), procCPU(b, pid)
	return c
}

func (c *cpuUse) report(b *testing.B) {
	self, plug := selfCPU(b)-c.self, procCPU(b, c.pid)-c.plug
	b.ReportMetric(float64(self.Microseconds())/float64(b.N), "host-cpu-us/op")
	b.ReportMetric(float64(plug.Microseconds())/float64(b.N), "plugin-cpu-us/op")
}

func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU reads the user and system time of process pid from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 100 per second).
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
