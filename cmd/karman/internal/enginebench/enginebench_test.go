package enginebench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/karmanmq/karman/engine"
)

func TestRun(t *testing.T) {
	for _, o := range []Options{
		{Size: 100, Count: 3001, Batch: 1, Producers: 3, Readers: 1, Queues: 8, Flush: engine.FlushAsync},
		// Uneven batches and readers, sync flush, several small segments.
		{Size: 700, Count: 3001, Batch: 7, Producers: 3, Readers: 3, Queues: 4, Flush: engine.FlushSync, SegmentSize: 1 << 20, RawDisk: true},
	} {
		o.Data = t.TempDir()
		var out, info bytes.Buffer
		if err := Run(context.Background(), o, &out, &info); err != nil {
			t.Fatalf("%+v: %v\n%s", o, err, info.String())
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		want := []string{"append", "read"}
		if o.RawDisk {
			want = append(want, "raw_disk")
		}
		if len(lines) != len(want) {
			t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), out.String())
		}
		for i, phase := range want {
			var r Result
			if err := json.Unmarshal([]byte(lines[i]), &r); err != nil {
				t.Fatal(err)
			}
			if r.Phase != phase || r.MBPerSec <= 0 || r.Bytes != o.Count*int64(o.Size) {
				t.Errorf("line %d: %s", i+1, lines[i])
			}
			if phase != "raw_disk" && (r.Count != o.Count || r.MsgsPerSec <= 0 || r.P50us <= 0 || r.P99us < r.P50us) {
				t.Errorf("line %d: %s", i+1, lines[i])
			}
		}
	}
}

func TestValidate(t *testing.T) {
	good := Options{Size: 1, Count: 1, Batch: 1, Producers: 1, Readers: 1, Queues: 1}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mut := range map[string]func(*Options){
		"size":      func(o *Options) { o.Size = 0 },
		"count":     func(o *Options) { o.Count = 0 },
		"batch":     func(o *Options) { o.Batch = 0 },
		"producers": func(o *Options) { o.Producers = -1 },
		"readers":   func(o *Options) { o.Readers = 0 },
		"queues":    func(o *Options) { o.Queues = engine.MaxQueues + 1 },
		"segment":   func(o *Options) { o.SegmentSize = -1 },
	} {
		o := good
		mut(&o)
		if o.Validate() == nil {
			t.Errorf("%s: invalid options accepted", name)
		}
	}
}
