package broker

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// GET_BROKER_RUNTIME_INFO (28) answers a table of figures that RocketMQ's
// dashboard (cluster page) and mqadmin clusterList read: message rates
// over the last 10 s, 1 min and 10 min, totals since the last two
// midnights, the commit log's bounds and disk use, and versions.

const (
	trafficTick = 10 * time.Second
	// trafficKeep is enough samples for the 10-minute rate.
	trafficKeep = int(10*time.Minute/trafficTick) + 1
)

// traffic holds samples of the engine's message counters (messages stored,
// messages pulled), one per trafficTick, and the counters at the last two
// midnights.
type traffic struct {
	mu      sync.Mutex
	boot    time.Time
	samples []trafficSample // oldest first
	// The totals at the start of today and of yesterday (local time), as
	// far as this process has seen them: zero before it started.
	today, yesterday trafficSample
}

type trafficSample struct {
	at      time.Time
	in, out int64
}

// add records a sample, rolling the midnight totals when a day has begun
// since the last one.
func (t *traffic) add(s trafficSample) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.samples); n > 0 {
		if last := t.samples[n-1]; midnight(last.at) != midnight(s.at) {
			t.yesterday = t.today
			t.today = last // the last count of the previous day
			t.today.at = midnight(s.at)
		}
	}
	t.samples = append(t.samples, s)
	if len(t.samples) > trafficKeep {
		t.samples = t.samples[len(t.samples)-trafficKeep:]
	}
}

func midnight(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

// rates returns the message rates (stored, pulled) from the sample nearest
// to window before now to now.
func (t *traffic) rates(now trafficSample, window time.Duration) (in, out float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var from *trafficSample
	for i := range t.samples {
		if now.at.Sub(t.samples[i].at) <= window {
			break
		}
		from = &t.samples[i]
	}
	if from == nil && len(t.samples) > 0 {
		from = &t.samples[0]
	}
	if from == nil {
		return 0, 0
	}
	d := now.at.Sub(from.at).Seconds()
	if d <= 0 {
		return 0, 0
	}
	return float64(now.in-from.in) / d, float64(now.out-from.out) / d
}

// trafficNow reads the engine's counters.
func (b *Broker) trafficNow() trafficSample { return trafficOf(b.eng.Stats()) }

// trafficOf sums the message counters of st, sampled now.
func trafficOf(st engine.Stats) trafficSample {
	s := trafficSample{at: time.Now()}
	for _, ts := range st.Topics {
		s.in += ts.MessagesIn
		s.out += ts.MessagesOut
	}
	return s
}

// trafficLoop samples the counters every trafficTick until the broker
// closes.
func (b *Broker) trafficLoop() {
	b.every(trafficTick, func() { b.traffic.add(b.trafficNow()) })
}

// getBrokerRuntimeInfo serves GET_BROKER_RUNTIME_INFO (28).
func (b *Broker) getBrokerRuntimeInfo(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	st := b.eng.Stats()
	now := trafficOf(st)
	// Rates over 10 s, 1 min and 10 min, written as Java writes them.
	var in, out [3]float64
	for i, w := range [...]time.Duration{10 * time.Second, time.Minute, 10 * time.Minute} {
		in[i], out[i] = b.traffic.rates(now, w)
	}
	rates := func(r [3]float64) string { return fmt.Sprintf("%.2f %.2f %.2f", r[0], r[1], r[2]) }
	putTps, getTps := rates(in), rates(out)
	b.traffic.mu.Lock()
	today, yesterday, boot := b.traffic.today, b.traffic.yesterday, b.traffic.boot
	b.traffic.mu.Unlock()
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	ratio := "0.0"
	if st.FileSystemTotal > 0 {
		ratio = strconv.FormatFloat(float64(st.FileSystemUsed)/float64(st.FileSystemTotal), 'f', 4, 64)
	}
	table := map[string]string{
		"brokerVersionDesc":               "V5_3_0",
		"brokerVersion":                   strconv.Itoa(int(wire.DefaultVersion)),
		"bootTimestamp":                   i64(boot.UnixMilli()),
		"startAcceptSendRequestTimeStamp": i64(boot.UnixMilli()),
		"putTps":                          putTps,
		"getTransferredTps":               getTps,
		"getFoundTps":                     getTps,
		"getTotalTps":                     getTps,
		"getMissTps":                      "0.00 0.00 0.00",
		"msgPutTotalTodayNow":             i64(now.in),
		"msgGetTotalTodayNow":             i64(now.out),
		"msgPutTotalTodayMorning":         i64(today.in),
		"msgGetTotalTodayMorning":         i64(today.out),
		"msgPutTotalYesterdayMorning":     i64(yesterday.in),
		"msgGetTotalYesterdayMorning":     i64(yesterday.out),
		"commitLogMinOffset":              i64(st.LogMinOffset),
		"commitLogMaxOffset":              i64(st.LogEndOffset),
		"commitLogDiskRatio":              ratio,
		"dispatchBehindBytes":             i64(st.LogEndOffset - st.DispatchedOffset),
		"pageCacheLockTimeMills":          "0",
		"earliestMessageTimeStamp":        i64(b.earliestStoreTime(st.LogMinOffset)),
		"runtime":                         runtimeString(time.Since(boot)),
	}
	if b.opts.RuntimeInfo != nil {
		for k, v := range b.opts.RuntimeInfo() {
			if _, own := table[k]; !own {
				table[k] = v
			}
		}
	}
	return jsonResponse(req, wire.KVTable{Table: table})
}

// earliestStoreTime is the store time of the first message in the commit
// log, as Java answers it, or 0 when the log holds none.
func (b *Broker) earliestStoreTime(logMin int64) int64 {
	m, err := b.eng.MessageAt(logMin)
	if err != nil {
		return 0
	}
	return m.StoreTimestamp
}

// runtimeString writes an uptime as Java brokers do: "[ 0 days, 1 hours,
// 2 minutes, 3 seconds ]".
func runtimeString(d time.Duration) string {
	s := int64(d / time.Second)
	return fmt.Sprintf("[ %d days, %d hours, %d minutes, %d seconds ]", s/86400, s%86400/3600, s%3600/60, s%60)
}
