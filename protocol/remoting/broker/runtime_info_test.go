package broker

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// TestTrafficRates checks the rates over each window and the totals kept
// at midnight.
func TestTrafficRates(t *testing.T) {
	var tr traffic
	day := time.Date(2026, 3, 1, 23, 50, 0, 0, time.Local)
	for i := range 61 { // ten minutes, 100 messages stored and 50 pulled a second
		at := day.Add(time.Duration(i) * trafficTick)
		tr.add(trafficSample{at: at, in: int64(i) * 1000, out: int64(i) * 500})
	}
	now := trafficSample{at: day.Add(600 * time.Second), in: 60000, out: 30000}
	for _, w := range []time.Duration{10 * time.Second, time.Minute, 10 * time.Minute} {
		if in, out := tr.rates(now, w); in != 100 || out != 50 {
			t.Errorf("rates over %s = %v, %v; want 100, 50", w, in, out)
		}
	}
	if tr.today.in != 59000 || tr.today.out != 29500 || tr.yesterday.in != 0 {
		t.Errorf("after midnight: today %+v, yesterday %+v; want today at the last count of the previous day", tr.today, tr.yesterday)
	}
	if len(tr.samples) != trafficKeep {
		t.Errorf("%d samples kept, want %d", len(tr.samples), trafficKeep)
	}
	var empty traffic
	if in, out := empty.rates(now, time.Minute); in != 0 || out != 0 {
		t.Errorf("rates without samples = %v, %v", in, out)
	}
}

// GET_BROKER_RUNTIME_INFO answers the table RocketMQ's tools read, with
// the counts of messages stored and pulled.
func TestBrokerRuntimeInfo(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	if err := h.eng.CreateTopic(meta.Topic{Name: "TopicR", ReadQueues: 1, WriteQueues: 1}); err != nil {
		t.Fatal(err)
	}
	before := time.Now().UnixMilli()
	for range 5 {
		h.send(p, "TopicR", 0, "m")
	}
	h.dispatched()
	h.pull(p, pullHeader("g", "TopicR", 0, 0))

	resp := invoke(t, p, request(wire.GetBrokerRuntimeInfo, nil, nil))
	wantCode(t, resp, wire.Success)
	var kv wire.KVTable
	if err := json.Unmarshal(resp.Body, &kv); err != nil {
		t.Fatal(err)
	}
	tab := kv.Table
	for _, k := range []string{"putTps", "getTransferredTps", "getFoundTps", "getTotalTps", "getMissTps"} {
		f := strings.Fields(tab[k])
		if len(f) != 3 {
			t.Errorf("%s = %q, want three rates", k, tab[k])
		}
		for _, v := range f {
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				t.Errorf("%s = %q: %v", k, tab[k], err)
			}
		}
	}
	num := func(k string) int64 {
		t.Helper()
		v, err := strconv.ParseInt(tab[k], 10, 64)
		if err != nil {
			t.Errorf("%s = %q, want an integer", k, tab[k])
		}
		return v
	}
	if n := num("msgPutTotalTodayNow"); n < 5 {
		t.Errorf("msgPutTotalTodayNow = %d after 5 sends", n)
	}
	if n := num("msgGetTotalTodayNow"); n < 5 {
		t.Errorf("msgGetTotalTodayNow = %d after pulling 5", n)
	}
	num("msgPutTotalTodayMorning")
	num("msgGetTotalYesterdayMorning")
	if num("commitLogMaxOffset") <= num("commitLogMinOffset") {
		t.Errorf("commit log bounds %s, %s", tab["commitLogMinOffset"], tab["commitLogMaxOffset"])
	}
	if ts := num("earliestMessageTimeStamp"); ts < before-1000 || ts > time.Now().UnixMilli() {
		t.Errorf("earliestMessageTimeStamp = %d, want the first send's time (after %d)", ts, before)
	}
	if r, err := strconv.ParseFloat(tab["commitLogDiskRatio"], 64); err != nil || r <= 0 || r > 1 {
		t.Errorf("commitLogDiskRatio = %q", tab["commitLogDiskRatio"])
	}
	if num("bootTimestamp") <= 0 || tab["brokerVersionDesc"] == "" || !strings.HasPrefix(tab["runtime"], "[ 0 days, 0 hours,") {
		t.Errorf("boot %s, version %q, runtime %q", tab["bootTimestamp"], tab["brokerVersionDesc"], tab["runtime"])
	}
}

// GET_BROKER_CONFIG answers the configuration as Java properties under
// Java's names.
func TestBrokerConfig(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	resp := invoke(t, p, request(wire.GetBrokerConfig, nil, nil))
	wantCode(t, resp, wire.Success)
	if !strings.Contains(resp.ExtFields["version"], `"timestamp"`) {
		t.Errorf("version header %q", resp.ExtFields["version"])
	}
	props := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(string(resp.Body), "\n"), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("line %q is not key=value", line)
		}
		props[k] = v
	}
	want := map[string]string{
		"brokerName":              DefaultBrokerName,
		"brokerClusterName":       DefaultClusterName,
		"flushDiskType":           "ASYNC_FLUSH",
		"autoCreateTopicEnable":   "true",
		"mappedFileSizeCommitLog": "4194304",
		"maxMessageSize":          "1048576",
		"messageDelayLevel":       "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h",
		"storePathRootDir":        h.eng.Dir(),
	}
	for k, v := range want {
		if props[k] != v {
			t.Errorf("%s = %q, want %q", k, props[k], v)
		}
	}
}

// TestUpdateBrokerConfig changes the long-polling cap at run time and
// refuses what cannot change, changing nothing.
func TestUpdateBrokerConfig(t *testing.T) {
	h := newHarness(t)
	p := h.dial(nil)
	config := func() map[string]string {
		resp := invoke(t, p, request(wire.GetBrokerConfig, nil, nil))
		wantCode(t, resp, wire.Success)
		out := map[string]string{}
		for _, line := range strings.Split(strings.TrimSuffix(string(resp.Body), "\n"), "\n") {
			k, v, _ := strings.Cut(line, "=")
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct{ body, remark string }{
		{"", "no setting"},
		{"suspendMaxTimeMills=abc", "want milliseconds from 1 to 29999"},
		{"suspendMaxTimeMills=30000", "want milliseconds"},
		{"suspendMaxTimeMills=0", "want milliseconds"},
		{"suspendMaxTimeMills=300\nbrokerName=other", "brokerName cannot be changed while the broker runs; settable now: suspendMaxTimeMills"},
		{"=5", "want key=value"},
	} {
		resp := invoke(t, p, request(wire.UpdateBrokerConfig, nil, []byte(tc.body)))
		wantCode(t, resp, wire.InvalidParameter)
		if !strings.Contains(resp.Remark, tc.remark) {
			t.Errorf("body %q: remark %q, want it to say %q", tc.body, resp.Remark, tc.remark)
		}
	}
	if got := config()["suspendMaxTimeMills"]; got != "20000" {
		t.Fatalf("after refused updates suspendMaxTimeMills = %s, want the default 20000", got)
	}

	resp := invoke(t, p, request(wire.UpdateBrokerConfig, nil, []byte("# cap long polling\nsuspendMaxTimeMills = 200\n")))
	wantCode(t, resp, wire.Success)
	if got := config()["suspendMaxTimeMills"]; got != "200" {
		t.Fatalf("suspendMaxTimeMills = %s after the update, want 200", got)
	}
	// A pull asking to wait 20 s on an empty queue now waits 200 ms.
	if err := h.eng.CreateTopic(meta.Topic{Name: "Idle", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW}); err != nil {
		t.Fatal(err)
	}
	ph := pullHeader("g", "Idle", 0, 0)
	ph.SysFlag |= wire.PullFlagSuspend
	ph.SuspendTimeoutMillis = 20000
	start := time.Now()
	resp = h.pull(p, ph)
	if took := time.Since(start); took > 5*time.Second || took < 150*time.Millisecond {
		t.Errorf("pull waited %v, want about 200ms", took)
	}
	if resp.ResponseCode() == wire.Success {
		t.Errorf("pull of an empty queue answered SUCCESS")
	}
}

// Options.RuntimeInfo adds figures to the table and never replaces the
// broker's own.
func TestBrokerRuntimeInfoExtra(t *testing.T) {
	h := newHarnessWith(t, harnessOptions{broker: Options{RuntimeInfo: func() map[string]string {
		return map[string]string{"haRole": "replica", "haLagBytes": "42", "brokerVersionDesc": "other"}
	}}})
	p := h.dial(nil)
	resp := invoke(t, p, request(wire.GetBrokerRuntimeInfo, nil, nil))
	wantCode(t, resp, wire.Success)
	var kv wire.KVTable
	if err := json.Unmarshal(resp.Body, &kv); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"haRole": "replica", "haLagBytes": "42", "brokerVersionDesc": "V5_3_0"} {
		if got := kv.Table[k]; got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}
