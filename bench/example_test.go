package bench_test

import (
	"context"
	"os"
	"time"

	"github.com/karmanmq/karman/bench"
	"github.com/karmanmq/karman/bench/latency"
)

// steady is a stand-in for a load generator: every phase acknowledges
// all messages in one second, each request taking 2 ms.
type steady struct{}

func (steady) Produce(_ context.Context, w bench.Workload) (bench.Measurement, error) {
	h := new(latency.Histogram)
	for range w.Count {
		h.Record(2 * time.Millisecond)
	}
	return bench.Measurement{Messages: w.Count, Elapsed: time.Second, Latency: h}, nil
}

func (s steady) Consume(ctx context.Context, w bench.Workload) (bench.Measurement, error) {
	return s.Produce(ctx, w)
}

// Run two targets through the same workload and print one JSON line each.
// Real targets use the generators of packages remoting, rocketmq and
// jetstream.
func ExampleRun() {
	w := bench.Workload{Count: 1000, Size: 1024, Producers: 16}
	targets := []bench.Target{
		{System: "karman", Client: "karman", Protocol: "remoting", Generator: steady{}},
		{System: "nats", Client: "nats.go", Protocol: "nats", Generator: steady{}},
	}
	if err := bench.Run(context.Background(), bench.ModeProduce, w, targets, bench.NewPrinter(os.Stdout, true)); err != nil {
		panic(err)
	}
	// Output:
	// {"system":"karman","phase":"produce","msgs_per_sec":1000,"p50_us":2000,"p99_us":2000,"count":1000,"size":1024,"producers":16,"inflight":1,"client":"karman","protocol":"remoting","flush":"async","mb_per_sec":1,"p999_us":2000,"max_us":2000,"elapsed_ms":1000}
	// {"system":"nats","phase":"produce","msgs_per_sec":1000,"p50_us":2000,"p99_us":2000,"count":1000,"size":1024,"producers":16,"inflight":1,"client":"nats.go","protocol":"nats","flush":"async","mb_per_sec":1,"p999_us":2000,"max_us":2000,"elapsed_ms":1000}
}
