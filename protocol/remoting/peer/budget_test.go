package peer

import (
	"errors"
	"testing"
	"time"
)

func TestNewBudget(t *testing.T) {
	for _, tc := range []struct {
		limit     int64
		maxFrame  int
		wantLimit int64
		wantLarge int64
	}{
		{limit: 256 << 20, maxFrame: 16 << 20, wantLimit: 256 << 20, wantLarge: 224 << 20},
		{limit: 17 << 20, maxFrame: 16 << 20, wantLimit: 17 << 20, wantLarge: 16 << 20},
		{limit: 16 << 20, maxFrame: 16 << 20, wantLimit: 16 << 20, wantLarge: 16 << 20},
		{limit: 1 << 20, maxFrame: 16 << 20, wantLimit: 16 << 20, wantLarge: 16 << 20}, // one maximal frame fits
	} {
		b := NewBudget(tc.limit, tc.maxFrame)
		if b.Limit() != tc.wantLimit || b.large != tc.wantLarge {
			t.Errorf("NewBudget(%d, %d): limit %d, large %d; want %d, %d", tc.limit, tc.maxFrame, b.Limit(), b.large, tc.wantLimit, tc.wantLarge)
		}
	}
}

// acquireAsync starts acquire on a goroutine; the channel gets its error.
func acquireAsync(b *Budget, n int, cancel chan struct{}) chan error {
	done := make(chan error, 1)
	go func() { done <- b.acquire(n, cancel) }()
	return done
}

func waitWaiting(t *testing.T, b *Budget, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for b.Waiting() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiting, want %d", b.Waiting(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func granted(t *testing.T, what string, done chan error, want bool) {
	t.Helper()
	select {
	case err := <-done:
		if !want || err != nil {
			t.Fatalf("%s: granted (err %v), want it to wait", what, err)
		}
	default:
		if want {
			t.Fatalf("%s: waits, want it granted", what)
		}
	}
}

func TestBudgetOrder(t *testing.T) {
	const mb = 1 << 20
	b := NewBudget(16*mb, 4*mb) // large frames may hold 14 MiB
	never := make(chan struct{})
	for range 3 {
		if err := b.acquire(4*mb, never); err != nil {
			t.Fatal(err)
		}
	}
	// 12 MiB held: a fourth large frame waits; a 1 MiB one, which
	// would fit, waits behind it.
	big1 := acquireAsync(b, 4*mb, never)
	waitWaiting(t, b, 1)
	big2 := acquireAsync(b, 1*mb, never)
	waitWaiting(t, b, 2)
	granted(t, "1 MiB frame behind a waiting one", big2, false)
	// A small frame passes them: the reserve is for it.
	if err := b.acquire(SmallFrame, never); err != nil {
		t.Fatal(err)
	}
	// A waiter that gives up takes nothing.
	cancel := make(chan struct{})
	gaveUp := acquireAsync(b, 2*mb, cancel)
	waitWaiting(t, b, 3)
	close(cancel)
	if err := <-gaveUp; !errors.Is(err, ErrClosed) {
		t.Fatalf("cancelled acquire: %v", err)
	}
	waitWaiting(t, b, 2)
	// Freeing 4 MiB admits both, in order.
	b.release(4 * mb)
	for _, done := range []chan error{big1, big2} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got, want := b.InUse(), int64(13*mb+SmallFrame); got != want {
		t.Fatalf("in use %d, want %d", got, want)
	}
	// Nothing large fits any more, small frames still do.
	big3 := acquireAsync(b, 2*mb, never)
	waitWaiting(t, b, 1)
	if err := b.acquire(SmallFrame, never); err != nil {
		t.Fatal(err)
	}
	b.release(2 * SmallFrame)
	granted(t, "2 MiB frame with 1.9 MiB free to large frames", big3, false)
	b.release(1 * mb)
	if err := <-big3; err != nil {
		t.Fatal(err)
	}
	if got, want := b.InUse(), int64(14*mb); got != want {
		t.Fatalf("in use %d, want %d", got, want)
	}
}
