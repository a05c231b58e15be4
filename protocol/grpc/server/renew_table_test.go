package server

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/grpc/session"
)

// TestLeaseTableDue checks which leases due returns, across clients, and
// that it drops the clients that are gone; run with -race, it also
// checks that a scan and clients adding, looking up and removing their
// leases share the table safely.
func TestLeaseTableDue(t *testing.T) {
	sessions := session.NewTable()
	var table leaseTable
	now := time.Now()
	a, b := sessions.Touch("a", "1.1.1.1:1"), sessions.Touch("b", "1.1.1.1:2")
	soon := table.add(a, "G", "a-soon", now.Add(time.Second), now.Add(time.Hour))
	table.add(a, "G", "a-later", now.Add(time.Minute), now.Add(time.Hour))
	bSoon := table.add(b, "G", "b-soon", now.Add(2*time.Second), now.Add(time.Hour))
	due := table.due(now.UnixMilli(), 5_000)
	if len(due) != 2 || !(due[0] == soon || due[1] == soon) || !(due[0] == bSoon || due[1] == bSoon) {
		t.Fatalf("due = %d leases, want a-soon and b-soon", len(due))
	}
	sessions.Terminate("b")
	if due := table.due(now.UnixMilli(), 5_000); len(due) != 1 || due[0] != soon {
		t.Fatalf("due after b left = %d leases, want a-soon", len(due))
	}
	if table.lookup(b, "b-soon") != nil {
		t.Fatal("the lease of a client that left is still held")
	}

	var scanner, clients sync.WaitGroup
	stop := make(chan struct{})
	scanner.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				table.due(now.UnixMilli(), 5_000)
			}
		}
	})
	for c := range 4 {
		clients.Go(func() {
			s := sessions.Touch(fmt.Sprint("c", c), "1.1.1.1:3")
			for i := range 500 {
				h := fmt.Sprint(c, "-", i)
				l := table.add(s, "G", h, now.Add(time.Second), now.Add(time.Hour))
				if table.lookup(s, h) != l {
					t.Errorf("lease %s not found after adding it", h)
				}
				table.remove(s, l)
			}
		})
	}
	clients.Wait()
	close(stop)
	scanner.Wait()
}
