package server

import (
	"slices"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/protobuf/types/known/durationpb"
)

func TestGroupBackoff(t *testing.T) {
	s := time.Second
	for _, tc := range []struct {
		name  string
		table []time.Duration
		told  backoff
		// the delays after attempts 1, 2, ...: told (as the client
		// computes them) and applied (the group's own)
		told5, applied5 []time.Duration
	}{
		{"default", nil, defaultBackoff,
			[]time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s}, []time.Duration{s, 2 * s, 4 * s, 8 * s, 16 * s}},
		{"exponential", []time.Duration{s, 2 * s, 3 * s, 3 * s}, backoff{s, 3 * s, 2},
			[]time.Duration{s, 2 * s, 3 * s, 3 * s, 3 * s}, []time.Duration{s, 2 * s, 3 * s, 3 * s, 3 * s}},
		{"customized", []time.Duration{s, 5 * s, 10 * s, 30 * s}, backoff{s, 30 * s, 5},
			[]time.Duration{s, 5 * s, 25 * s, 30 * s, 30 * s}, []time.Duration{s, 5 * s, 10 * s, 30 * s, 30 * s}},
		{"constant", []time.Duration{50 * time.Millisecond, 50 * time.Millisecond}, backoff{50 * time.Millisecond, 50 * time.Millisecond, 1},
			slices.Repeat([]time.Duration{50 * time.Millisecond}, 5), slices.Repeat([]time.Duration{50 * time.Millisecond}, 5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := meta.Group{Name: "G", RetryBackoff: tc.table}
			b := groupBackoff(g)
			if b != tc.told {
				t.Fatalf("told %+v, want %+v", b, tc.told)
			}
			var told, applied []time.Duration
			for a := int32(1); a <= 5; a++ {
				told, applied = append(told, b.delay(a)), append(applied, redeliveryDelay(g, a))
			}
			if !slices.Equal(told, tc.told5) || !slices.Equal(applied, tc.applied5) {
				t.Fatalf("delays told %v, applied %v; want %v, %v", told, applied, tc.told5, tc.applied5)
			}
		})
	}
}

// TestTelemetryConsumerRetryPolicy: a consumer is told its group's retry
// policy.
func TestTelemetryConsumerRetryPolicy(t *testing.T) {
	e := defaultPubEnv(t)
	s := time.Second
	if err := e.eng.CreateGroup(meta.Group{Name: "Backoff", MaxAttempts: 4, RetryBackoff: []time.Duration{s, 2 * s, 3 * s, 3 * s}}); err != nil {
		t.Fatal(err)
	}
	_, reply := e.telemetry("consumer@1", consumerDeclaration(rmqpb.ClientType_PUSH_CONSUMER, "Backoff", "T"))
	e.want(reply.GetStatus(), rmqpb.Code_OK)
	p := reply.GetSettings().GetBackoffPolicy()
	exp := p.GetExponentialBackoff()
	if p.GetMaxAttempts() != 4 || exp.GetInitial().AsDuration() != s || exp.GetMax().AsDuration() != 3*s || exp.GetMultiplier() != 2 {
		t.Fatalf("retry policy %v, want 4 attempts, 1s x2 up to 3s", p)
	}
}

// TestPushNackBackoff: a push consumer's nack keeps the message invisible
// for the group's delay for its delivery attempt, however short the
// duration it asks for; a simple consumer's change of invisible duration
// is taken as asked.
func TestPushNackBackoff(t *testing.T) {
	h := newConsumeHarness(t, Options{Consume: ConsumeOptions{MinChangeInvisible: 10 * time.Millisecond}})
	h.topic("T", 1)
	delays := []time.Duration{300 * time.Millisecond, 600 * time.Millisecond}
	h.group(meta.Group{Name: "G", MaxAttempts: 5, RetryBackoff: delays})
	h.send("T", "failing")
	h.srv.sessions.Touch("push", "").SetSettings(&rmqpb.Settings{ClientType: rmqpb.ClientType_PUSH_CONSUMER.Enum()})
	ctx := clientCtx("push")
	wait := receiveReq("G", "T", 1, 30*time.Second)
	wait.LongPollingTimeout = durationpb.New(5 * time.Second)
	msgs := h.mustReceive(ctx, wait, rmqpb.Code_OK)
	for attempt, delay := range append(delays, delays[1]) {
		if got := msgs[0].GetSystemProperties().GetDeliveryAttempt(); got != int32(attempt+1) {
			t.Fatalf("attempt %d, want %d", got, attempt+1)
		}
		nacked := time.Now()
		if resp := h.changeInvisible(ctx, "G", "T", msgs[0].GetSystemProperties().GetReceiptHandle(), time.Millisecond); resp.GetStatus().GetCode() != rmqpb.Code_OK {
			t.Fatalf("nack: %v", resp.GetStatus())
		}
		msgs = h.mustReceive(ctx, wait, rmqpb.Code_OK)
		// Invisible times are whole milliseconds since the epoch, so the
		// next visibility can come up to a millisecond before the delay
		// measured from a clock read in between.
		if d := time.Since(nacked); d < delay-time.Millisecond {
			t.Errorf("attempt %d, nacked, came back after %s, want at least %s", attempt+1, d, delay)
		}
	}

	// A simple consumer asks for what it wants.
	h.srv.sessions.Touch("simple", "").SetSettings(&rmqpb.Settings{ClientType: rmqpb.ClientType_SIMPLE_CONSUMER.Enum()})
	simple := clientCtx("simple")
	h.ack(ctx, "G", "T", msgs...)
	h.send("T", "changed")
	msgs = h.mustReceive(simple, wait, rmqpb.Code_OK)
	changed := time.Now()
	h.changeInvisible(simple, "G", "T", msgs[0].GetSystemProperties().GetReceiptHandle(), 10*time.Millisecond)
	h.mustReceive(simple, wait, rmqpb.Code_OK)
	if d := time.Since(changed); d >= delays[0] {
		t.Errorf("a simple consumer's message came back after %s, want its 10ms", d)
	}
}
