package broker

import (
	"errors"
	"fmt"
	"testing"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

func TestHookErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want wire.ResponseCode
	}{
		{fmt.Errorf("engine: send to T: %w", hook.Reject("no tenant")), wire.NoPermission},
		{fmt.Errorf("%w: *plugin on send to T: %w", engine.ErrHookFailed, errors.New("unreachable")), wire.SystemError},
	} {
		if got := codeOf(tc.err); got != tc.want {
			t.Errorf("codeOf(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
