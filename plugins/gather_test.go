package plugins

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestGatherAnswersEach: under concurrent callers every caller gets the
// answer to its own request, no more than maxCalls calls are in flight,
// no call carries more than maxBytes (but for a lone large request), and
// requests do get gathered.
func TestGatherAnswersEach(t *testing.T) {
	var inFlight, most, calls, gathered atomic.Int64
	g := &gather[int, int]{maxCalls: 2, maxBytes: 10}
	g.send = func(reqs []int) ([]int, []error) {
		n := inFlight.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		calls.Add(1)
		if len(reqs) > 1 {
			gathered.Add(1)
		}
		bytes := 0
		for _, r := range reqs {
			bytes += size(r)
		}
		if len(reqs) > 1 && bytes > 10 {
			t.Errorf("a call of %d requests carries %d bytes, limit 10", len(reqs), bytes)
		}
		time.Sleep(200 * time.Microsecond) // a call takes a while, so that others wait
		resps, errs := make([]int, len(reqs)), make([]error, len(reqs))
		for i, r := range reqs {
			resps[i] = -r
			if r%7 == 0 {
				errs[i] = errors.New("seven")
			}
		}
		inFlight.Add(-1)
		return resps, errs
	}
	var wg sync.WaitGroup
	for c := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				req := c*1000 + i + 1
				resp, err, held := g.do(context.Background(), req, size(req))
				if held || resp != -req || (err != nil) != (req%7 == 0) {
					t.Errorf("do(%d) = %d, %v, %v", req, resp, err, held)
					return
				}
			}
		}()
	}
	wg.Wait()
	if m := most.Load(); m > 2 {
		t.Errorf("%d calls were in flight at once, limit 2", m)
	}
	if gathered.Load() == 0 {
		t.Errorf("no call of %d carried more than one request", calls.Load())
	}
	if g.calls != 0 || len(g.queue) != 0 {
		t.Errorf("after all callers returned: %d calls, %d queued", g.calls, len(g.queue))
	}
	t.Logf("%d requests in %d calls", 16*200, calls.Load())
}

// size is a request's size for TestGatherAnswersEach: every tenth is
// larger than a call may carry with others.
func size(req int) int {
	if req%10 == 0 {
		return 11
	}
	return 3
}

// TestGatherCancel: a caller that gives up while waiting returns at once;
// one whose request is in a call is told its request is held.
func TestGatherCancel(t *testing.T) {
	release := make(chan struct{})
	started := make(chan []int, 16)
	g := &gather[int, int]{maxCalls: 1, maxBytes: 100}
	g.send = func(reqs []int) ([]int, []error) {
		started <- reqs
		<-release
		return make([]int, len(reqs)), make([]error, len(reqs))
	}
	first := make(chan error, 1)
	go func() { _, err, _ := g.do(context.Background(), 1, 1); first <- err }()
	if got := <-started; len(got) != 1 || got[0] != 1 {
		t.Fatalf("first call carries %v", got)
	}

	// Waiting behind the call in flight, then giving up.
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan bool, 1)
	go func() {
		_, err, held := g.do(ctx, 2, 1)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled waiter: %v", err)
		}
		gaveUp <- held
	}()
	waitQueued(t, g, 1)
	cancel()
	if held := <-gaveUp; held {
		t.Error("a request that never left the queue is held")
	}
	if n := queued(g); n != 0 {
		t.Errorf("%d requests queued after the only waiter gave up", n)
	}

	// Two more wait; the first call ends; the next call carries both.
	// The second of them gives up while that call is out: its request is
	// held.
	done := make(chan error, 1)
	go func() { _, err, _ := g.do(context.Background(), 3, 1); done <- err }()
	waitQueued(t, g, 1)
	ctx, cancel = context.WithCancel(context.Background())
	heldc := make(chan bool, 1)
	go func() { _, _, held := g.do(ctx, 4, 1); heldc <- held }()
	waitQueued(t, g, 2)
	release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if got := <-started; len(got) != 2 || got[0] != 3 || got[1] != 4 {
		t.Fatalf("second call carries %v, want [3 4]", got)
	}
	cancel()
	if held := <-heldc; !held {
		t.Error("a request in a call in flight is not held")
	}
	release <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if g.calls != 0 || queued(g) != 0 {
		t.Errorf("at the end: %d calls, %d queued", g.calls, queued(g))
	}
}

func queued(g *gather[int, int]) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// waitQueued waits until n requests are queued.
func waitQueued(t *testing.T, g *gather[int, int], n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for queued(g) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests queued, want %d", queued(g), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}
