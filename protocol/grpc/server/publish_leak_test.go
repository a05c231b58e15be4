package server

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

// serverGoroutines returns the stacks of goroutines running this
// package's telemetry and background code.
func serverGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "server.(*Server).Telemetry") || strings.Contains(g, "server.(*Server).expireLoop") {
			out = append(out, g)
		}
	}
	return out
}

// Closing the server ends its telemetry streams and background loops, so
// that a graceful stop finishes and nothing is left running.
func TestTelemetryNoLeaks(t *testing.T) {
	t.Run("serve", func(t *testing.T) {
		e := defaultPubEnv(t)
		e.producer("producer@1", "T")
		e.telemetry("consumer@1", consumerDeclaration(rmqpb.ClientType_PUSH_CONSUMER, "G", "T"))
		stream, _ := e.telemetry("consumer@2", consumerDeclaration(rmqpb.ClientType_SIMPLE_CONSUMER, "G", "T"))
		if err := stream.CloseSend(); err != nil {
			t.Fatal(err)
		}
		if _, err := e.cli.NotifyClientTermination(e.as("consumer@1"), &rmqpb.NotifyClientTerminationRequest{}); err != nil {
			t.Fatal(err)
		}
		e.send(e.msg("T", "x", nil))
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := serverGoroutines()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left:\n%s", len(left), strings.Join(left, "\n\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
