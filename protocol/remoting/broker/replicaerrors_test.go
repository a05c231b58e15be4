package broker

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// A send to a replica gets the code producers retry on another broker.
func TestNotMasterCode(t *testing.T) {
	err := fmt.Errorf("engine: send: %w: this broker is a replica, send to the master", engine.ErrNotMaster)
	if got := codeOf(err); got != wire.ServiceNotAvailable {
		t.Fatalf("codeOf(%v) = %v, want SERVICE_NOT_AVAILABLE (14)", err, got)
	}
}

// stubReplicator decides sync replication's outcome for the send tests.
type stubReplicator struct {
	refuse, timeout bool
}

func (s *stubReplicator) CheckWrite() error {
	if s.refuse {
		return fmt.Errorf("%w: 1 in sync of the 2 required", engine.ErrInSyncReplicasNotEnough)
	}
	return nil
}

func (s *stubReplicator) WaitReplicated(context.Context, int64) error {
	if s.timeout {
		return fmt.Errorf("%w: 1 of the 2 members required hold it", engine.ErrReplicaTimeout)
	}
	return nil
}

// Confirmed lets consumers read everything: these tests are about sends.
func (s *stubReplicator) Confirmed(end int64) int64 { return end }

// With sync replication a send too few replicas can take is refused with
// SYSTEM_ERROR (nothing stored, producers retry), and one the replicas
// did not confirm is FLUSH_SLAVE_TIMEOUT with its result.
func TestSendWithSyncReplication(t *testing.T) {
	r := &stubReplicator{}
	h := newHarnessWith(t, harnessOptions{
		engine: engine.Options{AutoCreateTopics: true, AutoCreateGroups: true, Replicator: r},
		broker: Options{AutoCreateTopics: true, AutoCreateGroups: true},
	})
	p := h.dial(nil)
	sendOne := func() *wire.Command {
		return invoke(t, p, request(wire.SendMessage, sendHeader("TopicA", 0, props()), []byte("m")))
	}
	wantCode(t, sendOne(), wire.Success)

	r.refuse = true
	resp := sendOne()
	wantCode(t, resp, wire.SystemError)
	if !strings.Contains(resp.Remark, "in-sync replicas not enough") {
		t.Fatalf("remark %q", resp.Remark)
	}

	r.refuse, r.timeout = false, true
	resp = sendOne()
	wantCode(t, resp, wire.FlushSlaveTimeout)
	var rh wire.SendMessageResponseHeader
	if err := resp.DecodeHeader(&rh); err != nil || rh.MsgID == "" || rh.QueueOffset != 1 {
		t.Fatalf("FLUSH_SLAVE_TIMEOUT without the send's result: %+v, %v", rh, err)
	}
	// Stored: the first and the unconfirmed message, not the refused one.
	pr := h.pull(p, pullHeader("g", "TopicA", 0, 0))
	if n := len(records(t, pr.Body)); n != 2 {
		t.Fatalf("%d messages stored, want 2", n)
	}
}
