package server

import (
	"errors"
	"fmt"
	"testing"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

func TestHookStatusCodes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want rmqpb.Code
	}{
		{fmt.Errorf("engine: send to T: %w", hook.Reject("no tenant")), rmqpb.Code_FORBIDDEN},
		{fmt.Errorf("%w: *plugin on send to T: %w", engine.ErrHookFailed, errors.New("unreachable")), rmqpb.Code_INTERNAL_SERVER_ERROR},
	} {
		if got := codeOf(tc.err); got != tc.want {
			t.Errorf("codeOf(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
