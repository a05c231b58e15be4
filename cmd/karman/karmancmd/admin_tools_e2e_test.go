package karmancmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/cmd/karman/internal/admin"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
	"github.com/karmanmq/karman/server"
)

// TestAdminTools runs message send and browse, broker config and stats
// against an in-process "karman serve".
func TestAdminTools(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	r := startServe(t, server.Default, "--data", t.TempDir(), "--segment-size", "64MiB",
		"--http-addr", "127.0.0.1:0", "--namesrv-addr", "127.0.0.1:0", "--broker-addr", "127.0.0.1:0", "--log-level", "error")
	ns, brokerAddr := r.addrs["namesrv"], r.addrs["broker"]

	adminJSON[admin.TopicChange](t, ns, "topic", "create", "tools", "--queues", "2")

	// message send: from an argument, with a tag, keys and properties, to queue 1.
	sent := adminJSON[admin.Sent](t, ns, "message", "send", "tools", `{"n":1}`, "--tag", "t1", "--keys", "k1 k2",
		"--property", "source=cli", "--property", "a=b=c", "--queue", "1")
	if sent.Topic != "tools" || sent.QueueID != 1 || sent.QueueOffset != 0 || sent.MsgID == "" || sent.OffsetMsgID == "" {
		t.Fatalf("message send = %+v", sent)
	}
	m := adminJSON[admin.Message](t, ns, "message", "get", sent.OffsetMsgID)
	if m.Body != `{"n":1}` || m.Tags != "t1" || strings.Join(m.Keys, ",") != "k1,k2" || m.Properties["source"] != "cli" || m.Properties["a"] != "b=c" || m.MsgID != sent.MsgID {
		t.Errorf("the sent message reads back as %+v", m)
	}
	// From a file, three more to queue 1.
	body := filepath.Join(t.TempDir(), "body.txt")
	if err := os.WriteFile(body, []byte("from a file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		adminJSON[admin.Sent](t, ns, "message", "send", "tools", "--file", body, "--queue", "1")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"message", "send", "tools"}, "no body"},
		{[]string{"message", "send", "tools", "x", "--file", body}, "not both"},
		{[]string{"message", "send", "tools", "x", "--property", "novalue"}, `--property "novalue": want key=value`},
		{[]string{"message", "send", "tools", "x", "--property", "TAGS=x"}, "property TAGS is set by the command itself"},
		{[]string{"message", "send", "tools", "x", "--queue", "7"}, "queue 7: topic tools has 2 write queues"},
		{[]string{"message", "send", "nosuchtopic", "x"}, "nosuchtopic"},
		{[]string{"message", "send", "tools", "--file", filepath.Join(t.TempDir(), "missing")}, "--file"},
		{[]string{"message", "browse", "tools"}, "--queue is required"},
		{[]string{"message", "browse", "tools", "--queue", "5"}, "queue 5: topic tools has 2 read queues"},
		{[]string{"message", "browse", "tools", "--queue", "0", "--from", "-1"}, "offset -1"},
		{[]string{"message", "browse", "tools", "--queue", "0", "--count", "0"}, "--count 0"},
		{[]string{"broker", "config", "set", "brokerName", "x"}, "brokerName cannot be changed while the broker runs"},
		{[]string{"broker", "config", "set", "suspendMaxTimeMills", "40000"}, "want milliseconds from 1 to 29999"},
		{[]string{"broker", "config", "set", "suspendMaxTimeMills"}, "set needs KEY and VALUE"},
		{[]string{"broker", "config", "frob"}, `unknown action "frob"`},
		{[]string{"broker", "config", "get", "nope"}, "has no setting nope"},
		{[]string{"broker", "config", "--broker", "other"}, "no broker master named other"},
		{[]string{"stats", "--interval", "1ms"}, "--interval 1ms"},
	} {
		if err := adminFails(t, ns, tc.args...); !strings.Contains(err, tc.want) {
			t.Errorf("admin %s: %v, want it to say %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}

	// message browse: queue 1 from offset 1, two at a time.
	b := adminJSON[admin.Browsed](t, ns, "message", "browse", "tools", "--queue", "1", "--from", "1", "--count", "2")
	if b.MinOffset != 0 || b.MaxOffset != 4 || len(b.Messages) != 2 || b.NextOffset != 3 ||
		b.Messages[0].QueueOffset != 1 || b.Messages[1].QueueOffset != 2 || b.Messages[0].Body != "from a file\n" {
		t.Errorf("browse queue 1 from 1, count 2 = %+v", b)
	}
	if b := adminJSON[admin.Browsed](t, ns, "message", "browse", "tools", "--queue", "1", "--from", "3"); len(b.Messages) != 1 || b.NextOffset != 4 {
		t.Errorf("browse queue 1 from 3 = %+v", b)
	}
	if b := adminJSON[admin.Browsed](t, ns, "message", "browse", "tools", "--queue", "0"); len(b.Messages) != 0 || b.MaxOffset != 0 {
		t.Errorf("browse of the empty queue 0 = %+v", b)
	}
	if out, _, err := runAdmin(t, "--namesrv", ns, "message", "browse", "tools", "--queue", "1"); err != nil ||
		!strings.Contains(out, `{"n":1}`) || !strings.Contains(out, "next: --from 4") {
		t.Errorf("browse table: %v\n%s", err, out)
	}

	// broker config: get all, get one, set, get again.
	cfg := adminJSON[brokerConfigList](t, ns, "broker", "config")
	if len(cfg.Brokers) != 1 || cfg.Brokers[0].Settings["suspendMaxTimeMills"] != "20000" || cfg.Brokers[0].Settings["flushDiskType"] != "ASYNC_FLUSH" {
		t.Fatalf("broker config = %+v", cfg)
	}
	set := adminJSON[admin.ConfigChange](t, ns, "broker", "config", "set", "suspendMaxTimeMills", "5000")
	if len(set.Brokers) != 1 || set.Key != "suspendMaxTimeMills" {
		t.Errorf("broker config set = %+v", set)
	}
	if one := adminJSON[brokerConfigList](t, ns, "broker", "config", "get", "suspendMaxTimeMills"); len(one.Brokers) != 1 ||
		len(one.Brokers[0].Settings) != 1 || one.Brokers[0].Settings["suspendMaxTimeMills"] != "5000" {
		t.Errorf("broker config get suspendMaxTimeMills after set = %+v", one)
	}

	// stats: a group that committed 1 of queue 1's 4 messages, while a
	// sender adds messages to the topic during the sample.
	p, err := peer.Dial(context.Background(), brokerAddr, peer.Options{RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	adminJSON[admin.GroupChange](t, ns, "group", "create", "readers")
	invokeOK(t, p, wire.UpdateConsumerOffset, &wire.UpdateConsumerOffsetRequestHeader{ConsumerGroup: "readers", Topic: "tools", QueueID: 1, CommitOffset: 1}, nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sentDuring int
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, _, err := runAdmin(t, "--namesrv", ns, "message", "send", "tools", "tick", "--queue", "0"); err != nil {
				t.Errorf("send during stats: %v", err)
				return
			}
			sentDuring++
		}
	})
	st := adminJSON[admin.Stats](t, ns, "stats", "--interval", "1s")
	close(stop)
	wg.Wait()
	var tools *admin.TopicRate
	for i := range st.Topics {
		if st.Topics[i].Topic == "tools" {
			tools = &st.Topics[i]
		}
	}
	if tools == nil || tools.InPerSec <= 0 || tools.Messages < 5 || tools.Messages > int64(4+sentDuring) || st.Interval < 1 {
		t.Errorf("stats: tools = %+v over %.2fs with %d sent during the run", tools, st.Interval, sentDuring)
	}
	var readers *admin.GroupRate
	for i := range st.Groups {
		if st.Groups[i].Group == "readers" && st.Groups[i].Topic == "tools" {
			readers = &st.Groups[i]
		}
	}
	if readers == nil || readers.ConsumedTotal != 1 || readers.OutPerSec != 0 || readers.Lag < 3 {
		t.Errorf("stats: readers = %+v in %+v", readers, st.Groups)
	}
}
