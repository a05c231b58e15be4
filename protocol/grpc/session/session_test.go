package session

import (
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

func gone(s *Session) bool {
	select {
	case <-s.Gone():
		return true
	default:
		return false
	}
}

func TestTableTouchTerminate(t *testing.T) {
	tab := NewTable()
	s := tab.Touch("c1", "10.0.0.1:5000")
	if again := tab.Touch("c1", ""); again != s || s.RemoteAddr() != "10.0.0.1:5000" {
		t.Fatalf("second touch: %p %q", again, s.RemoteAddr())
	}
	st := s.Attach()
	dropped, ok := tab.Terminate("c1")
	if !ok || dropped != s || !gone(s) || s.HasStream() || !s.Terminated() {
		t.Fatalf("terminate: %v %v, gone %v, stream %v, terminated %v", dropped, ok, gone(s), s.HasStream(), s.Terminated())
	}
	select {
	case <-st.Done():
	default:
		t.Fatal("stream not closed")
	}
	if _, ok := tab.Terminate("c1"); ok {
		t.Fatal("terminated twice")
	}
	if fresh := tab.Touch("c1", ""); fresh == s || gone(fresh) || fresh.Terminated() {
		t.Fatal("a request after termination reuses the dropped session")
	}
}

func TestTableExpire(t *testing.T) {
	tab := NewTable()
	old := tab.Touch("old", "")
	old.Attach() // a stream does not keep a silent client
	cut := time.Now()
	time.Sleep(time.Millisecond)
	fresh := tab.Touch("fresh", "")
	seen := tab.Touch("seen", "")
	seen.mu.Lock()
	seen.seen = cut.Add(-time.Hour)
	seen.mu.Unlock()
	seen.Seen()

	got := tab.Expire(cut)
	if len(got) != 1 || got[0] != old || !gone(old) || old.HasStream() || old.Terminated() {
		t.Fatalf("expired %v", got)
	}
	if gone(fresh) || gone(seen) {
		t.Fatal("expired a live session")
	}
	if _, ok := tab.Lookup("old"); ok {
		t.Fatal("expired session still in the table")
	}
}

func TestStreamReplaceAndSend(t *testing.T) {
	tab := NewTable()
	s := tab.Touch("c1", "")
	if err := s.Send(&rmqpb.TelemetryCommand{}); !errors.Is(err, ErrNoStream) {
		t.Fatalf("send without stream: %v", err)
	}
	first := s.Attach()
	second := s.Attach()
	select {
	case <-first.Done():
	default:
		t.Fatal("replaced stream not closed")
	}
	s.Detach(first) // the older stream ending does not detach the newer
	if !s.HasStream() {
		t.Fatal("detaching a replaced stream detached the current one")
	}
	cmd := &rmqpb.TelemetryCommand{Status: &rmqpb.Status{Code: rmqpb.Code_OK}}
	if err := s.Send(cmd); err != nil {
		t.Fatal(err)
	}
	if got := <-second.Out(); got != cmd {
		t.Fatalf("got %v", got)
	}
	for range outboxSize {
		if err := s.Send(cmd); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Send(cmd); !errors.Is(err, ErrStreamFull) {
		t.Fatalf("send to a full stream: %v", err)
	}
	s.Detach(second)
	if s.HasStream() {
		t.Fatal("detached stream still attached")
	}
}

func TestSettingsSummary(t *testing.T) {
	s := NewTable().Touch("c1", "")
	if s.Settings() != nil || s.Language() != rmqpb.Language_LANGUAGE_UNSPECIFIED || s.MaxAttempts() != 0 {
		t.Fatal("a client that declared nothing has settings")
	}
	st := &rmqpb.Settings{
		UserAgent:     &rmqpb.UA{Language: rmqpb.Language_NODE_JS},
		BackoffPolicy: &rmqpb.RetryPolicy{MaxAttempts: 7},
	}
	s.SetSettings(st)
	st.UserAgent.Language = rmqpb.Language_JAVA // the session keeps its own copy
	if s.Language() != rmqpb.Language_NODE_JS || s.MaxAttempts() != 7 || s.Settings().GetBackoffPolicy().GetMaxAttempts() != 7 {
		t.Fatalf("language %s, max attempts %d", s.Language(), s.MaxAttempts())
	}
	s.SetSettings(&rmqpb.Settings{})
	if s.Language() != rmqpb.Language_LANGUAGE_UNSPECIFIED || s.MaxAttempts() != 0 {
		t.Fatal("new settings without a user agent or policy kept the old ones")
	}
}

// Lookups and touches from many goroutines find one session per client.
func TestTableConcurrentTouch(t *testing.T) {
	tab := NewTable()
	var wg sync.WaitGroup
	got := make([]*Session, 16)
	for i := range got {
		wg.Go(func() {
			for range 100 {
				got[i] = tab.Touch("c1", "")
				tab.Lookup("c1")
			}
		})
	}
	wg.Wait()
	for _, s := range got {
		if s != got[0] {
			t.Fatal("two sessions for one client")
		}
	}
}

func TestTouchAddr(t *testing.T) {
	tab := NewTable()
	a := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 5000}
	b := &net.TCPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 6000}
	s := tab.TouchAddr("c1", a)
	if s.RemoteAddr() != "10.0.0.1:5000" {
		t.Fatalf("remote %q", s.RemoteAddr())
	}
	if tab.TouchAddr("c1", nil) != s || s.RemoteAddr() != "10.0.0.1:5000" {
		t.Fatal("a call without an address forgot the last one")
	}
	tab.TouchAddr("c1", b)
	if s.RemoteAddr() != "10.0.0.2:6000" {
		t.Fatalf("after a new connection: remote %q", s.RemoteAddr())
	}
	tab.Touch("c1", "10.0.0.3:7000")
	if tab.TouchAddr("c1", b); s.RemoteAddr() != "10.0.0.2:6000" {
		t.Fatalf("back on the second connection: remote %q", s.RemoteAddr())
	}
	tab.TouchAddr("c1", &net.UnixAddr{Name: "/sock", Net: "unix"})
	if s.RemoteAddr() != "/sock" {
		t.Fatalf("unix: remote %q", s.RemoteAddr())
	}
}
