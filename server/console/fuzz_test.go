package console

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/karmanmq/karman/engine/meta"
)

// FuzzTopicSpec decodes topic bodies as the API does and applies them: no
// body makes it panic, and what it accepts stays in range.
func FuzzTopicSpec(f *testing.F) {
	f.Add([]byte(`{"name":"orders","queues":4,"type":"fifo","perm":"rw"}`))
	f.Add([]byte(`{"readQueues":1,"writeQueues":1024}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		var s TopicSpec
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if dec.Decode(&s) != nil {
			return
		}
		tp := meta.Topic{Name: "t", ReadQueues: 8, WriteQueues: 8, Perm: meta.PermRW}
		if err := s.apply(&tp); err != nil {
			if e := errorOf(err); e.Status != 400 {
				t.Fatalf("%q: %v answered %d", body, err, e.Status)
			}
			return
		}
		if tp.ReadQueues < 1 || tp.ReadQueues > maxQueues || tp.WriteQueues < 1 || tp.WriteQueues > maxQueues {
			t.Fatalf("%q gave queues %d/%d", body, tp.ReadQueues, tp.WriteQueues)
		}
	})
}

// FuzzParseTime: every string is a time of 0 or more, or a 400.
func FuzzParseTime(f *testing.F) {
	for _, s := range []string{"0", "1700000000000", "2026-01-02T15:04:05Z", "2026-01-02T15:04:05.123+02:00", "-1", "noon"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := parseTime("t", s)
		if err != nil {
			if e := errorOf(err); e.Status != 400 || e.Code != "INVALID_ARGUMENT" {
				t.Fatalf("%q: %v", s, e)
			}
			return
		}
		if ms < 0 {
			t.Fatalf("%q gave %d", s, ms)
		}
	})
}
