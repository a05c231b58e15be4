package controller

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// notLeaderFor answers "not the leader" to its first n requests and an
// empty group after that, as a new leader does until it has applied the
// log of the terms before its own.
func notLeaderFor(n int32) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= n {
			w.WriteHeader(http.StatusMisdirectedRequest)
			w.Write([]byte(`{"error":"not the leader","code":"not-leader"}`))
			return
		}
		w.Write([]byte(`{}`))
	}))
	return srv, &calls
}

// A call made while the quorum is between leaders waits for one instead
// of failing: every node answering "not the leader" is an election.
func TestClientWaitsForALeader(t *testing.T) {
	srv, calls := notLeaderFor(4)
	defer srv.Close()
	cl := NewClient([]string{srv.Listener.Addr().String(), srv.Listener.Addr().String()})
	if _, err := cl.Register(context.Background(), RegisterRequest{Group: "g", BrokerID: 1, Addr: "a:1"}); err != nil {
		t.Fatalf("register across an election: %v", err)
	}
	if got := calls.Load(); got != 5 {
		t.Fatalf("%d calls, want 5 (4 refused, then the answer)", got)
	}
}

// A quorum that never settles fails the call with ErrNotLeader within
// leaderWait; a caller's deadline cuts the wait short.
func TestClientGivesUpWaitingForALeader(t *testing.T) {
	srv, _ := notLeaderFor(1 << 30)
	defer srv.Close()
	cl := NewClient([]string{srv.Listener.Addr().String()})

	start := time.Now()
	_, err := cl.Register(context.Background(), RegisterRequest{Group: "g", BrokerID: 1, Addr: "a:1"})
	if !errors.Is(err, ErrNotLeader) {
		t.Fatalf("%v, want ErrNotLeader", err)
	}
	if took := time.Since(start); took > leaderWait+time.Second {
		t.Fatalf("gave up after %v, want within %v", took, leaderWait)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := cl.Register(ctx, RegisterRequest{Group: "g", BrokerID: 1, Addr: "a:1"}); err == nil {
		t.Fatal("a call to a quorum without a leader succeeded")
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("a 100ms deadline was held for %v", took)
	}
}

// Nodes that cannot be reached at all fail the call at once: no node
// said an election is under way.
func TestClientUnreachableFailsAtOnce(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.Listener.Addr().String()
	srv.Close()
	cl := NewClient([]string{addr})
	start := time.Now()
	if _, err := cl.Register(context.Background(), RegisterRequest{Group: "g", BrokerID: 1, Addr: "a:1"}); err == nil {
		t.Fatal("a call to a closed address succeeded")
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("took %v", took)
	}
}
