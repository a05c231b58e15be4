package bench

import (
	"errors"
	"fmt"
	"time"

	"github.com/karmanmq/karman/bench/latency"
)

// Phase names what a Result measured.
type Phase string

// Phases.
const (
	// PhaseProduce: each producer sends one message and waits for its
	// acknowledgement before the next.
	PhaseProduce Phase = "produce"
	// PhaseProduceAsync: each producer keeps Inflight sends outstanding.
	PhaseProduceAsync Phase = "produce_async"
	// PhaseConsume: pre-loaded messages are pulled, Batch per request.
	PhaseConsume Phase = "consume"
)

// Mode is what a run measures.
type Mode string

// Modes.
const (
	ModeProduce Mode = "produce" // PhaseProduce or PhaseProduceAsync
	ModeConsume Mode = "consume" // PhaseConsume after an unmeasured pre-load
)

// Defaults of Workload.
const (
	DefaultTopic = "BenchTopic"
	DefaultSize  = 1024
	DefaultCount = 1_000_000
	DefaultBatch = 32
)

// Workload is the work every target of a run does.
type Workload struct {
	// Topic (or stream subject) to use. Default DefaultTopic.
	Topic string
	// Size is the message body size in bytes. Default DefaultSize.
	Size int
	// Count is the number of messages sent (or consumed) in total.
	// Default DefaultCount.
	Count int64
	// Producers is the number of producing goroutines. Default 1.
	Producers int
	// Inflight is the number of sends each producer keeps outstanding;
	// 1 (the default) is a synchronous producer.
	Inflight int
	// Batch is the number of messages asked for per pull request.
	// Default DefaultBatch.
	Batch int
	// Consumers is the number of pulling goroutines; 0 means one per
	// queue of the topic (the JetStream generator then uses as many as
	// the Karman topic has queues).
	Consumers int
	// Flush is the flush policy the servers were started with, "async"
	// or "sync"; it is reported, not applied.
	Flush string
}

// EnsureDefaults fills the zero fields with their defaults and returns w.
func (w *Workload) EnsureDefaults() *Workload {
	if w.Topic == "" {
		w.Topic = DefaultTopic
	}
	if w.Size == 0 {
		w.Size = DefaultSize
	}
	if w.Count == 0 {
		w.Count = DefaultCount
	}
	if w.Producers == 0 {
		w.Producers = 1
	}
	if w.Inflight == 0 {
		w.Inflight = 1
	}
	if w.Batch == 0 {
		w.Batch = DefaultBatch
	}
	if w.Flush == "" {
		w.Flush = "async"
	}
	return w
}

// Validate reports the first field that cannot work.
func (w *Workload) Validate() error {
	switch {
	case w.Topic == "":
		return errors.New("bench: empty topic")
	case w.Size < 1:
		return fmt.Errorf("bench: size %d: want at least 1 byte", w.Size)
	case w.Count < 1:
		return fmt.Errorf("bench: count %d: want at least 1 message", w.Count)
	case w.Producers < 1:
		return fmt.Errorf("bench: producers %d: want at least 1", w.Producers)
	case w.Inflight < 1:
		return fmt.Errorf("bench: inflight %d: want at least 1", w.Inflight)
	case w.Batch < 1:
		return fmt.Errorf("bench: batch %d: want at least 1", w.Batch)
	case w.Consumers < 0:
		return fmt.Errorf("bench: consumers %d: want 0 (one per queue) or more", w.Consumers)
	}
	return nil
}

// ProducePhase returns PhaseProduce for synchronous producers and
// PhaseProduceAsync when more than one send is in flight per producer.
func (w *Workload) ProducePhase() Phase {
	if w.Inflight > 1 {
		return PhaseProduceAsync
	}
	return PhaseProduce
}

// Body returns a message body of w.Size bytes of printable text. Every
// generator sends the same bytes.
func (w *Workload) Body() []byte {
	b := make([]byte, w.Size)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// Share returns the part of total that worker i of n handles: total/n,
// plus one for the first total%n workers.
func Share(total int64, n, i int) int64 {
	s := total / int64(n)
	if int64(i) < total%int64(n) {
		s++
	}
	return s
}

// Measurement is what a generator measured in one phase.
type Measurement struct {
	// Messages produced (acknowledged) or consumed.
	Messages int64
	// Elapsed runs from the first request to the last acknowledgement or
	// message.
	Elapsed time.Duration
	// Latency holds one sample per request: send to acknowledgement, or
	// pull request to its response.
	Latency *latency.Histogram
	// Retries counts requests repeated because the server asked the
	// client to back off (busy, flow control).
	Retries int64
	// Consumers is the number of pulling goroutines of a consume phase.
	Consumers int
}

// Result is one line of output: one system, one phase.
type Result struct {
	System     string  `json:"system"`
	Phase      Phase   `json:"phase"`
	MsgsPerSec float64 `json:"msgs_per_sec"`
	P50us      float64 `json:"p50_us"`
	P99us      float64 `json:"p99_us"`
	Count      int64   `json:"count"`
	Size       int     `json:"size"`
	Producers  int     `json:"producers"`
	Inflight   int     `json:"inflight"`
	// The fields above are the comparison; those below say more.
	Client    string  `json:"client"`
	Protocol  string  `json:"protocol"`
	Flush     string  `json:"flush"`
	MBPerSec  float64 `json:"mb_per_sec"`
	P999us    float64 `json:"p999_us"`
	MaxUs     float64 `json:"max_us"`
	ElapsedMs float64 `json:"elapsed_ms"`
	Batch     int     `json:"batch,omitempty"`
	Consumers int     `json:"consumers,omitempty"`
	Retries   int64   `json:"retries,omitempty"`
}

// Result turns a measurement of phase into a Result; System and Client
// are left for the caller.
func (w *Workload) Result(phase Phase, m Measurement) Result {
	r := Result{
		Phase:     phase,
		Count:     m.Messages,
		Size:      w.Size,
		Producers: w.Producers,
		Inflight:  w.Inflight,
		Flush:     w.Flush,
		ElapsedMs: round(m.Elapsed.Seconds()*1e3, 1),
		Retries:   m.Retries,
	}
	if phase == PhaseConsume {
		r.Batch = w.Batch
		r.Consumers = m.Consumers
	}
	if s := m.Elapsed.Seconds(); s > 0 {
		r.MsgsPerSec = round(float64(m.Messages)/s, 0)
		r.MBPerSec = round(float64(m.Messages)*float64(w.Size)/s/1e6, 1)
	}
	if h := m.Latency; h != nil {
		us := func(d time.Duration) float64 { return round(float64(d)/1e3, 1) }
		r.P50us, r.P99us, r.P999us, r.MaxUs = us(h.Quantile(0.5)), us(h.Quantile(0.99)), us(h.Quantile(0.999)), us(h.Max())
	}
	return r
}

func round(v float64, decimals int) float64 {
	p := 1.0
	for range decimals {
		p *= 10
	}
	if v < 0 {
		return float64(int64(v*p-0.5)) / p
	}
	return float64(int64(v*p+0.5)) / p
}
