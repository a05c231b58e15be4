package engine

import (
	"context"
	"testing"
)

// TestDispatchLag: the lag counts the bytes stored and not yet indexed,
// and is zero once the dispatcher has caught up.
func TestDispatchLag(t *testing.T) {
	e := openTest(t, t.TempDir(), nil)
	defer e.Close()
	mustTopic(t, e, "T", 1)
	ctx := context.Background()
	for range 10 {
		if _, err := e.Send(ctx, newMsg("T", "body")); err != nil {
			t.Fatal(err)
		}
	}
	if lag := e.DispatchLag(); lag < 0 || lag > e.Stats().LogEndOffset {
		t.Fatalf("lag %d outside [0, log end]", lag)
	}
	if err := e.WaitDispatched(ctx); err != nil {
		t.Fatal(err)
	}
	st := e.Stats()
	if lag := e.DispatchLag(); lag != 0 || st.LogEndOffset == 0 {
		t.Fatalf("after WaitDispatched: lag %d, log end %d; want 0 and more than 0", lag, st.LogEndOffset)
	}
}
