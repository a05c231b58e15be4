package commitlog_test

import (
	"encoding/binary"
	"fmt"
	"log"
	"os"

	"github.com/karmanmq/karman/engine/commitlog"
)

// offsetStamper writes each record's log offset into its first 8 bytes
// just before it is copied in, the way the engine stamps stored messages.
type offsetStamper struct{}

func (offsetStamper) Stamp(i int, rec []byte, off int64) {
	binary.BigEndian.PutUint64(rec, uint64(off))
}

func Example() {
	dir, err := os.MkdirTemp("", "commitlog-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	l, err := commitlog.Open(dir, &commitlog.Options{SegmentSize: 1 << 20, Flush: commitlog.FlushSync})
	if err != nil {
		log.Fatal(err)
	}

	// One batch, stored contiguously; Append returns once it is durable.
	recs := [][]byte{
		append(make([]byte, 8), "hello"...),
		append(make([]byte, 8), "world"...),
	}
	offs := make([]int64, len(recs))
	if err := l.Append(recs, offsetStamper{}, offs); err != nil {
		log.Fatal(err)
	}

	p, err := l.Read(offs[1], nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("record at %d: %q, stamped %d\n", offs[1], p[8:], binary.BigEndian.Uint64(p))

	end, err := l.Scan(l.MinOffset(), func(off, next int64, payload []byte) error {
		fmt.Printf("scan %d..%d: %q\n", off, next, payload[8:])
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("end", end, "flushed", l.FlushedOffset())
	if err := l.Close(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// record at 32: "world", stamped 32
	// scan 0..32: "hello"
	// scan 32..64: "world"
	// end 64 flushed 64
}
