package meta

import (
	"bytes"
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"
)

func open(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// openTemp opens a store in a fresh directory, closed when the test ends.
func openTemp(t testing.TB) *Store {
	t.Helper()
	s := open(t, t.TempDir())
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func mustNil(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func names[T any](xs []T, name func(T) string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, name(x))
	}
	return out
}

func topicNames(s *Store) []string { return names(s.Topics(), func(t Topic) string { return t.Name }) }
func groupNames(s *Store) []string { return names(s.Groups(), func(g Group) string { return g.Name }) }

func TestTopics(t *testing.T) {
	s := openTemp(t)
	if _, err := s.Topic("T"); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("Topic on an empty store: %v", err)
	}
	if got := s.Topics(); len(got) != 0 {
		t.Fatalf("Topics on an empty store = %v", got)
	}

	t1 := Topic{Name: "T", ReadQueues: 4, WriteQueues: 8, Perm: PermRW, MessageType: MessageTypeFIFO,
		Attributes: map[string]string{"+message.type": "FIFO"}}
	mustNil(t, s.PutTopic(t1))
	mustNil(t, s.PutTopic(Topic{Name: "B", ReadQueues: 1, WriteQueues: 1, System: true}))
	mustNil(t, s.PutTopic(Topic{Name: "T1", ReadQueues: 2, WriteQueues: 2}))
	if got, err := s.Topic("T"); err != nil || !reflect.DeepEqual(got, t1) {
		t.Fatalf("Topic(T) = %+v, %v; want %+v", got, err, t1)
	}
	if got := topicNames(s); !slices.Equal(got, []string{"B", "T", "T1"}) {
		t.Fatalf("Topics = %v, want sorted [B T T1]", got)
	}

	// PutTopic replaces.
	t1.ReadQueues, t1.Perm = 16, PermRead
	mustNil(t, s.PutTopic(t1))
	if got, _ := s.Topic("T"); got.ReadQueues != 16 || got.Perm != PermRead {
		t.Fatalf("after replace: Topic(T) = %+v", got)
	}

	// Invalid queue counts are refused and change nothing.
	for _, bad := range []Topic{{Name: "T", ReadQueues: 0, WriteQueues: 1}, {Name: "X", ReadQueues: 1, WriteQueues: -1}} {
		if err := s.PutTopic(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("PutTopic(%+v): err = %v, want ErrInvalid", bad, err)
		}
	}
	if got, _ := s.Topic("T"); got.ReadQueues != 16 {
		t.Fatalf("a refused PutTopic changed the topic: %+v", got)
	}
	if _, err := s.Topic("X"); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("a refused PutTopic created a topic: %v", err)
	}

	mustNil(t, s.DeleteTopic("T"))
	if _, err := s.Topic("T"); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("Topic after delete: %v", err)
	}
	if err := s.DeleteTopic("T"); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("second DeleteTopic: %v", err)
	}
	if got := topicNames(s); !slices.Equal(got, []string{"B", "T1"}) {
		t.Fatalf("Topics after delete = %v", got)
	}
}

func TestCreateTopic(t *testing.T) {
	s := openTemp(t)
	first := Topic{Name: "T", ReadQueues: 4, WriteQueues: 4, Perm: PermRW}
	got, created, err := s.CreateTopic(first)
	if err != nil || !created || !reflect.DeepEqual(got, first) {
		t.Fatalf("CreateTopic = %+v, %v, %v", got, created, err)
	}
	// A second create keeps the first configuration, even when the new one
	// is different or invalid.
	for _, again := range []Topic{first, {Name: "T", ReadQueues: 1, WriteQueues: 1}, {Name: "T"}} {
		got, created, err := s.CreateTopic(again)
		if err != nil || created || !reflect.DeepEqual(got, first) {
			t.Fatalf("CreateTopic(%+v) again = %+v, %v, %v; want the first topic, false, nil", again, got, created, err)
		}
	}
	if _, created, err := s.CreateTopic(Topic{Name: "Bad", ReadQueues: 1}); !errors.Is(err, ErrInvalid) || created {
		t.Fatalf("CreateTopic without write queues: created=%v err=%v", created, err)
	}
	if _, err := s.Topic("Bad"); !errors.Is(err, ErrTopicNotFound) {
		t.Fatalf("invalid topic was stored: %v", err)
	}
}

func TestGroups(t *testing.T) {
	s := openTemp(t)
	if _, err := s.Group("G"); !errors.Is(err, ErrGroupNotFound) {
		t.Fatalf("Group on an empty store: %v", err)
	}
	g := Group{Name: "G", FIFO: true, MaxAttempts: 3, RetryBackoff: []time.Duration{time.Second, time.Minute}}
	mustNil(t, s.PutGroup(g))
	mustNil(t, s.PutGroup(Group{Name: "A", Broadcast: true}))
	if got, err := s.Group("G"); err != nil || !reflect.DeepEqual(got, g) {
		t.Fatalf("Group(G) = %+v, %v; want %+v", got, err, g)
	}
	if got := groupNames(s); !slices.Equal(got, []string{"A", "G"}) {
		t.Fatalf("Groups = %v", got)
	}
	g.ConsumeDisabled = true
	mustNil(t, s.PutGroup(g))
	if got, _ := s.Group("G"); !got.ConsumeDisabled {
		t.Fatalf("PutGroup did not replace: %+v", got)
	}

	got, created, err := s.CreateGroup(Group{Name: "G"})
	if err != nil || created || !reflect.DeepEqual(got, g) {
		t.Fatalf("CreateGroup on an existing group = %+v, %v, %v; want the stored group", got, created, err)
	}
	got, created, err = s.CreateGroup(Group{Name: "N", MaxAttempts: 5})
	if err != nil || !created || got.Name != "N" || got.MaxAttempts != 5 {
		t.Fatalf("CreateGroup = %+v, %v, %v", got, created, err)
	}

	mustNil(t, s.DeleteGroup("G"))
	if _, err := s.Group("G"); !errors.Is(err, ErrGroupNotFound) {
		t.Fatalf("Group after delete: %v", err)
	}
	if err := s.DeleteGroup("G"); !errors.Is(err, ErrGroupNotFound) {
		t.Fatalf("second DeleteGroup: %v", err)
	}
	if got := groupNames(s); !slices.Equal(got, []string{"A", "N"}) {
		t.Fatalf("Groups after delete = %v", got)
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	topics := []Topic{
		{Name: "A", ReadQueues: 1, WriteQueues: 1},
		{Name: "T", ReadQueues: 4, WriteQueues: 8, Perm: PermRW | PermInherit, MessageType: MessageTypeTransaction,
			Attributes: map[string]string{"+message.type": "TRANSACTION", "k": "v w"}, System: true},
		{Name: "gone", ReadQueues: 1, WriteQueues: 1},
	}
	for _, tp := range topics {
		mustNil(t, s.PutTopic(tp))
	}
	groups := []Group{
		{Name: "G", FIFO: true, Broadcast: true, MaxAttempts: 7, RetryBackoff: []time.Duration{10 * time.Millisecond, 2 * time.Hour}, ConsumeDisabled: true},
		{Name: "H"},
		{Name: "gone"},
	}
	for _, g := range groups {
		mustNil(t, s.PutGroup(g))
	}
	mustNil(t, s.DeleteTopic("gone"))
	mustNil(t, s.DeleteGroup("gone"))
	mustNil(t, s.CommitOffset("G", "T", 3, 42))
	mustNil(t, s.SavePopStates([]PopRecord{{Group: "G", Topic: "T", Queue: 1, State: []byte("state"), Offset: 9}}, false))
	mustNil(t, s.PutSecret("handle-key", []byte{0, 1, 2}))
	mustNil(t, s.Close())

	s = open(t, dir)
	defer s.Close()
	if got := s.Topics(); !reflect.DeepEqual(got, topics[:2]) {
		t.Fatalf("Topics after reopen = %+v, want %+v", got, topics[:2])
	}
	if got := s.Groups(); !reflect.DeepEqual(got, groups[:2]) {
		t.Fatalf("Groups after reopen = %+v, want %+v", got, groups[:2])
	}
	if off, err := s.Offset("G", "T", 3); err != nil || off != 42 {
		t.Fatalf("Offset after reopen = %d, %v", off, err)
	}
	if off, err := s.Offset("G", "T", 1); err != nil || off != 9 {
		t.Fatalf("pop offset after reopen = %d, %v", off, err)
	}
	if st, ok, err := s.PopState("G", "T", 1); err != nil || !ok || string(st) != "state" {
		t.Fatalf("PopState after reopen = %q, %v, %v", st, ok, err)
	}
	if sec, ok, err := s.Secret("handle-key"); err != nil || !ok || !bytes.Equal(sec, []byte{0, 1, 2}) {
		t.Fatalf("Secret after reopen = %x, %v, %v", sec, ok, err)
	}
}

func TestOffsets(t *testing.T) {
	s := openTemp(t)
	if _, err := s.Offset("G", "T", 0); !errors.Is(err, ErrNoOffset) {
		t.Fatalf("Offset before any commit: %v", err)
	}
	commits := []struct {
		group, topic string
		queue        int32
		off          int64
	}{
		{"G", "T", 0, 10},
		{"G", "T", 1, 11},
		{"G", "T", 0, 12}, // overwrites
		{"G", "T", 256, 0},
		{"G", "T1", 0, 20},
		{"G", "S", 2, 30},
		{"G1", "T", 0, 40},
		{"", "T", 0, 50},
		{"H", "T", 0, 1 << 50},
	}
	for _, c := range commits {
		mustNil(t, s.CommitOffset(c.group, c.topic, c.queue, c.off))
	}
	// Groups and topics need not be configured to hold offsets.
	if len(s.Groups()) != 0 || len(s.Topics()) != 0 {
		t.Fatal("committing offsets created groups or topics")
	}

	reads := []struct {
		group, topic string
		queue        int32
		off          int64
		ok           bool
	}{
		{"G", "T", 0, 12, true},
		{"G", "T", 1, 11, true},
		{"G", "T", 256, 0, true},
		{"G", "T", 2, 0, false},
		{"G", "T1", 0, 20, true},
		{"G1", "T", 0, 40, true},
		{"", "T", 0, 50, true},
		{"H", "T", 0, 1 << 50, true},
		{"G", "T2", 0, 0, false},
		{"X", "T", 0, 0, false},
	}
	for _, r := range reads {
		off, err := s.Offset(r.group, r.topic, r.queue)
		if r.ok && (err != nil || off != r.off) || !r.ok && !errors.Is(err, ErrNoOffset) {
			t.Errorf("Offset(%q, %q, %d) = %d, %v; want %d (found %v)", r.group, r.topic, r.queue, off, err, r.off, r.ok)
		}
	}

	offsets := []struct {
		group, topic string
		want         map[int32]int64
	}{
		{"G", "T", map[int32]int64{0: 12, 1: 11, 256: 0}},
		{"G", "T1", map[int32]int64{0: 20}},
		{"G", "S", map[int32]int64{2: 30}},
		{"G1", "T", map[int32]int64{0: 40}},
		{"G", "U", map[int32]int64{}},
		{"none", "T", map[int32]int64{}},
	}
	for _, o := range offsets {
		got, err := s.Offsets(o.group, o.topic)
		if err != nil || !maps.Equal(got, o.want) {
			t.Errorf("Offsets(%q, %q) = %v, %v; want %v", o.group, o.topic, got, err, o.want)
		}
	}

	topics := []struct {
		group string
		want  []string
	}{
		{"G", []string{"S", "T", "T1"}}, // key order: by topic length, then bytes
		{"G1", []string{"T"}},
		{"", []string{"T"}},
		{"none", nil},
	}
	for _, tt := range topics {
		got, err := s.OffsetTopics(tt.group)
		slices.Sort(got)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("OffsetTopics(%q) = %v, %v; want %v", tt.group, got, err, tt.want)
		}
	}
}

func TestPopStates(t *testing.T) {
	for _, sync := range []bool{false, true} {
		name := "nosync"
		if sync {
			name = "sync"
		}
		t.Run(name, func(t *testing.T) {
			s := openTemp(t)
			if st, ok, err := s.PopState("G", "T", 0); err != nil || ok || st != nil {
				t.Fatalf("PopState before save = %q, %v, %v", st, ok, err)
			}
			recs := []PopRecord{
				{Group: "G", Topic: "T", Queue: 0, State: []byte("zero"), Offset: 5},
				{Group: "G", Topic: "T", Queue: 1, State: []byte{0, 0xff, ' '}, Offset: -1},
				{Group: "G", Topic: "T1", Queue: 0, State: []byte("other topic"), Offset: 0},
				{Group: "G1", Topic: "T", Queue: 0, State: []byte("other group"), Offset: 7},
				{Group: "G", Topic: "T", Queue: 2, State: nil, Offset: -1},
			}
			mustNil(t, s.SavePopStates(recs, sync))
			for _, r := range recs {
				st, ok, err := s.PopState(r.Group, r.Topic, r.Queue)
				if err != nil || !ok || !bytes.Equal(st, r.State) {
					t.Errorf("PopState(%q, %q, %d) = %q, %v, %v; want %q", r.Group, r.Topic, r.Queue, st, ok, err, r.State)
				}
				off, err := s.Offset(r.Group, r.Topic, r.Queue)
				if r.Offset >= 0 && (err != nil || off != r.Offset) || r.Offset < 0 && !errors.Is(err, ErrNoOffset) {
					t.Errorf("Offset(%q, %q, %d) = %d, %v; want %d", r.Group, r.Topic, r.Queue, off, err, r.Offset)
				}
			}

			// A negative offset leaves a committed offset alone.
			mustNil(t, s.CommitOffset("G", "T", 1, 77))
			mustNil(t, s.SavePopStates([]PopRecord{{Group: "G", Topic: "T", Queue: 1, State: []byte("v2"), Offset: -1}}, sync))
			if off, err := s.Offset("G", "T", 1); err != nil || off != 77 {
				t.Fatalf("Offset after a save without offset = %d, %v; want 77", off, err)
			}
			if st, _, _ := s.PopState("G", "T", 1); string(st) != "v2" {
				t.Fatalf("PopState not replaced: %q", st)
			}

			// The returned state is a copy.
			st, _, _ := s.PopState("G", "T", 0)
			st[0] = 'X'
			if again, _, _ := s.PopState("G", "T", 0); string(again) != "zero" {
				t.Fatalf("modifying a returned state changed the store: %q", again)
			}

			// An empty save is fine.
			mustNil(t, s.SavePopStates(nil, sync))

			mustNil(t, s.DeletePopStates("G", "T"))
			for _, r := range recs {
				_, ok, err := s.PopState(r.Group, r.Topic, r.Queue)
				want := !(r.Group == "G" && r.Topic == "T")
				if err != nil || ok != want {
					t.Errorf("after DeletePopStates(G, T): PopState(%q, %q, %d) found=%v, %v; want %v", r.Group, r.Topic, r.Queue, ok, err, want)
				}
			}
			// Offsets are not pop states.
			if off, err := s.Offset("G", "T", 0); err != nil || off != 5 {
				t.Fatalf("DeletePopStates removed an offset: %d, %v", off, err)
			}
		})
	}
}

// seed stores, for every group and topic given, an offset and a pop state
// in queues 0 and 1.
func seed(t testing.TB, s *Store, groups, topics []string) {
	t.Helper()
	for _, g := range groups {
		for _, tp := range topics {
			for q := range int32(2) {
				mustNil(t, s.CommitOffset(g, tp, q, int64(q)+1))
				mustNil(t, s.SavePopStates([]PopRecord{{Group: g, Topic: tp, Queue: q, State: []byte(g + "/" + tp), Offset: -1}}, true))
			}
		}
	}
}

// present reports which of (group, topic) still has its offsets and its pop
// states; both must agree.
func present(t testing.TB, s *Store, group, topic string) bool {
	t.Helper()
	offs, err := s.Offsets(group, topic)
	mustNil(t, err)
	_, hasState, err := s.PopState(group, topic, 1)
	mustNil(t, err)
	if (len(offs) == 2) != hasState || (len(offs) != 2 && len(offs) != 0) {
		t.Fatalf("(%s, %s): %d offsets but pop state found=%v", group, topic, len(offs), hasState)
	}
	return hasState
}

func TestDeleteTopicData(t *testing.T) {
	s := openTemp(t)
	topics := []string{"T", "T1", "TT", "S"}
	groups := []string{"G", "G1", "H"}
	for _, tp := range topics {
		mustNil(t, s.PutTopic(Topic{Name: tp, ReadQueues: 2, WriteQueues: 2}))
	}
	for _, g := range groups {
		mustNil(t, s.PutGroup(Group{Name: g}))
	}
	seed(t, s, groups, topics)

	mustNil(t, s.DeleteTopic("T"))
	for _, g := range groups {
		for _, tp := range topics {
			if got, want := present(t, s, g, tp), tp != "T"; got != want {
				t.Errorf("after DeleteTopic(T): data of (%s, %s) present=%v, want %v", g, tp, got, want)
			}
		}
	}
	if got := groupNames(s); !slices.Equal(got, groups) {
		t.Fatalf("DeleteTopic changed the groups: %v", got)
	}
}

// TestDeleteTopicUnregisteredGroup checks that deleting a topic also drops
// the offsets of a group that committed offsets without being configured
// (a pull consumer needs no group record), so a topic created again under
// the same name does not inherit them.
func TestDeleteTopicUnregisteredGroup(t *testing.T) {
	s := openTemp(t)
	mustNil(t, s.PutTopic(Topic{Name: "T", ReadQueues: 2, WriteQueues: 2}))
	mustNil(t, s.PutGroup(Group{Name: "G"}))
	seed(t, s, []string{"G", "unregistered"}, []string{"T", "T1"})

	mustNil(t, s.DeleteTopic("T"))
	for _, g := range []string{"G", "unregistered"} {
		if present(t, s, g, "T") {
			t.Errorf("after DeleteTopic(T): group %s still has offsets or pop state in T", g)
		}
		if !present(t, s, g, "T1") {
			t.Errorf("after DeleteTopic(T): group %s lost its data in T1", g)
		}
	}
	if got, err := s.OffsetTopics("unregistered"); err != nil || !slices.Equal(got, []string{"T1"}) {
		t.Fatalf("OffsetTopics(unregistered) = %v, %v; want [T1]", got, err)
	}
}

func TestDeleteGroupData(t *testing.T) {
	s := openTemp(t)
	topics := []string{"T", "T1"}
	groups := []string{"G", "G1", "GG", "F"}
	for _, g := range groups {
		mustNil(t, s.PutGroup(Group{Name: g}))
	}
	seed(t, s, groups, topics)

	mustNil(t, s.DeleteGroup("G"))
	for _, g := range groups {
		for _, tp := range topics {
			if got, want := present(t, s, g, tp), g != "G"; got != want {
				t.Errorf("after DeleteGroup(G): data of (%s, %s) present=%v, want %v", g, tp, got, want)
			}
		}
	}
	if got, err := s.OffsetTopics("G"); err != nil || len(got) != 0 {
		t.Fatalf("OffsetTopics of a deleted group = %v, %v", got, err)
	}
}

func TestSecrets(t *testing.T) {
	s := openTemp(t)
	if sec, ok, err := s.Secret("k"); err != nil || ok || sec != nil {
		t.Fatalf("Secret before put = %x, %v, %v", sec, ok, err)
	}
	mustNil(t, s.PutSecret("k", []byte("one")))
	mustNil(t, s.PutSecret("k2", []byte("two")))
	mustNil(t, s.PutSecret("empty", nil))
	mustNil(t, s.PutSecret("k", []byte("three")))
	tests := []struct {
		name string
		want string
		ok   bool
	}{
		{"k", "three", true},
		{"k2", "two", true},
		{"empty", "", true},
		{"", "", false},
		{"k3", "", false},
	}
	for _, tt := range tests {
		sec, ok, err := s.Secret(tt.name)
		if err != nil || ok != tt.ok || string(sec) != tt.want {
			t.Errorf("Secret(%q) = %q, %v, %v; want %q, %v", tt.name, sec, ok, err, tt.want, tt.ok)
		}
	}
	// Secrets are not topics or groups.
	if len(s.Topics()) != 0 || len(s.Groups()) != 0 {
		t.Fatal("a secret shows up as a topic or group")
	}
}

func TestConcurrentUse(t *testing.T) {
	s := openTemp(t)
	done := make(chan struct{})
	for i := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			name := string(rune('a' + i))
			for j := range 20 {
				if _, _, err := s.CreateTopic(Topic{Name: name, ReadQueues: 1, WriteQueues: 1}); err != nil {
					t.Error(err)
					return
				}
				if err := s.PutGroup(Group{Name: name, MaxAttempts: int32(j)}); err != nil {
					t.Error(err)
					return
				}
				_ = s.Topics()
				_ = s.Groups()
				if err := s.CommitOffset(name, name, 0, int64(j)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
	if got := topicNames(s); !slices.Equal(got, []string{"a", "b", "c", "d"}) {
		t.Fatalf("Topics = %v", got)
	}
}

// TestOffsetGroups checks the groups that committed offsets in a topic,
// with group and topic names that are prefixes of one another.
func TestOffsetGroups(t *testing.T) {
	s, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, o := range []struct {
		group, topic string
		queue        int32
	}{{"g1", "T", 0}, {"g1", "T", 1}, {"g1", "U", 0}, {"g2", "T", 3}, {"g10", "V", 0}, {"g", "T", 0}, {"g3", "TT", 0}} {
		if err := s.CommitOffset(o.group, o.topic, o.queue, 5); err != nil {
			t.Fatal(err)
		}
	}
	groups, err := s.OffsetGroups("T")
	if err != nil || !slices.Equal(groups, []string{"g", "g1", "g2"}) {
		t.Errorf("groups of T = %v, %v", groups, err)
	}
	if groups, err := s.OffsetGroups("nobody"); err != nil || len(groups) != 0 {
		t.Errorf("groups of a topic without offsets = %v, %v", groups, err)
	}
}
