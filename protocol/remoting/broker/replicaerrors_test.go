package broker

import (
	"fmt"
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
