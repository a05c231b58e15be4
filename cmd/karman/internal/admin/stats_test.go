package admin

import (
	"testing"
	"time"
)

func TestRatesBetween(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := &Counts{At: t0,
		Topics:   map[string]int64{"orders": 100, "gone": 50},
		Consumed: map[GroupTopic]int64{{"billing", "orders"}: 80, {"reset", "orders"}: 90},
		Lag:      map[GroupTopic]int64{},
	}
	b := &Counts{At: t0.Add(2 * time.Second),
		Topics:   map[string]int64{"orders": 110, "new": 4, "gone": 0},
		Consumed: map[GroupTopic]int64{{"billing", "orders"}: 84, {"reset", "orders"}: 10, {"fresh", "orders"}: 6},
		Lag:      map[GroupTopic]int64{{"billing", "orders"}: 26},
	}
	s := RatesBetween(a, b)
	if s.Interval != 2 {
		t.Errorf("interval %v", s.Interval)
	}
	wantTopics := []TopicRate{{"gone", 0, 0}, {"new", 4, 2}, {"orders", 110, 5}}
	if len(s.Topics) != len(wantTopics) {
		t.Fatalf("topics %+v", s.Topics)
	}
	for i, w := range wantTopics {
		if s.Topics[i] != w {
			t.Errorf("topic %d = %+v, want %+v", i, s.Topics[i], w)
		}
	}
	wantGroups := []GroupRate{
		{"billing", "orders", 84, 2, 26},
		{"fresh", "orders", 6, 0, 0},  // first seen in b: no rate yet
		{"reset", "orders", 10, 0, 0}, // went back: no negative rate
	}
	if len(s.Groups) != len(wantGroups) {
		t.Fatalf("groups %+v", s.Groups)
	}
	for i, w := range wantGroups {
		if s.Groups[i] != w {
			t.Errorf("group %d = %+v, want %+v", i, s.Groups[i], w)
		}
	}
	if z := RatesBetween(b, b); z.Topics[2].InPerSec != 0 {
		t.Errorf("no time between samples gave %+v", z.Topics)
	}
}
