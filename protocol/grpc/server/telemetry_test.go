package server

import (
	"io"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/engine/registry"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"github.com/karmanmq/karman/protocol/grpc/session"
	"google.golang.org/protobuf/proto"
)

// wantBackoff checks an exponential retry policy.
func (e *pubEnv) wantBackoff(p *rmqpb.RetryPolicy, attempts int32, initial, ceiling time.Duration) {
	e.t.Helper()
	exp := p.GetExponentialBackoff()
	if p.GetMaxAttempts() != attempts || exp == nil || exp.GetInitial().AsDuration() != initial ||
		exp.GetMax().AsDuration() != ceiling || exp.GetMultiplier() != 2 {
		e.t.Fatalf("backoff policy %v, want %d attempts, %s to %s, x2", p, attempts, initial, ceiling)
	}
}

func TestTelemetryProducerSettings(t *testing.T) {
	e := newPubEnv(t, engine.Options{AutoCreateTopics: true}, Options{AutoCreateTopics: true, MaxBodySize: 1 << 20})
	declared := producerDeclaration("T1", "T2")
	declared.RequestTimeout = nil
	_, reply := e.telemetry("producer@1", declared)
	e.want(reply.GetStatus(), rmqpb.Code_OK)
	st := reply.GetSettings()
	pub := st.GetPublishing()
	if pub == nil || pub.GetMaxBodySize() != 1<<20 || !pub.GetValidateMessageType() || len(pub.GetTopics()) != 2 || pub.GetTopics()[1].GetName() != "T2" {
		t.Fatalf("publishing %v", pub)
	}
	if st.GetClientType() != rmqpb.ClientType_PRODUCER || st.GetUserAgent().GetVersion() != "1.0.8" {
		t.Fatalf("settings %v do not echo the client's", st)
	}
	e.wantBackoff(st.GetBackoffPolicy(), 3, 10*time.Millisecond, time.Second)

	// The producer is registered in the producer group of each topic, with
	// its session as its connection.
	for _, topic := range []string{"T1", "T2"} {
		ps := e.eng.Clients().Producers(topic)
		if len(ps) != 1 || ps[0].ID != "producer@1" || ps[0].Protocol != Protocol {
			t.Fatalf("producers of %s: %+v", topic, ps)
		}
		if sess, ok := ps[0].Conn.(*session.Session); !ok || sess.ID() != "producer@1" || !sess.HasStream() {
			t.Fatalf("producer connection %#v", ps[0].Conn)
		}
	}
}

func TestTelemetryConsumerSettings(t *testing.T) {
	e := defaultPubEnv(t)
	if err := e.eng.CreateGroup(meta.Group{Name: "Ordered", FIFO: true, MaxAttempts: 5}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kind     rmqpb.ClientType
		group    string
		fifo     bool
		attempts int32
		consume  registry.ConsumeType
	}{
		{rmqpb.ClientType_PUSH_CONSUMER, "Ordered", true, 5, registry.ConsumePush},
		{rmqpb.ClientType_SIMPLE_CONSUMER, "AutoCreated", false, meta.DefaultMaxAttempts, registry.ConsumeSimple},
		{rmqpb.ClientType_PULL_CONSUMER, "Puller", false, meta.DefaultMaxAttempts, registry.ConsumePull},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			id := "consumer@" + tc.group
			declared := consumerDeclaration(tc.kind, tc.group, "T")
			declared.GetSubscription().LongPollingTimeout = nil
			_, reply := e.telemetry(id, declared)
			e.want(reply.GetStatus(), rmqpb.Code_OK)
			sub := reply.GetSettings().GetSubscription()
			if sub == nil || sub.GetGroup().GetName() != tc.group || sub.Fifo == nil || sub.GetFifo() != tc.fifo ||
				sub.GetReceiveBatchSize() != 32 || sub.GetLongPollingTimeout().AsDuration() != 20*time.Second ||
				len(sub.GetSubscriptions()) != 1 || sub.GetSubscriptions()[0].GetTopic().GetName() != "T" {
				t.Fatalf("subscription %v", sub)
			}
			e.wantBackoff(reply.GetSettings().GetBackoffPolicy(), tc.attempts, time.Second, time.Minute)

			if _, err := e.eng.Group(tc.group); err != nil {
				t.Fatalf("group: %v", err)
			}
			cs := e.eng.Clients().Consumers(tc.group)
			if len(cs) != 1 || string(cs[0].ID) != id || cs[0].Type != tc.consume || cs[0].FIFO != tc.fifo ||
				len(cs[0].Subscriptions) != 1 || cs[0].Subscriptions[0].Topic != "T" || cs[0].Subscriptions[0].Expression != "*" {
				t.Fatalf("consumers of %s: %+v", tc.group, cs)
			}
		})
	}
}

// Settings the server refuses get an error status and no settings, so
// that the client's start-up fails with the reason instead of hanging.
func TestTelemetryRefusedSettings(t *testing.T) {
	e := newPubEnv(t, engine.Options{AutoCreateTopics: true}, Options{AutoCreateTopics: true})
	if err := e.eng.CreateGroup(meta.Group{Name: "G"}); err != nil {
		t.Fatal(err)
	}
	sqlBad := consumerDeclaration(rmqpb.ClientType_PUSH_CONSUMER, "G", "T")
	sqlBad.GetSubscription().GetSubscriptions()[0].Expression = &rmqpb.FilterExpression{Type: rmqpb.FilterType_SQL, Expression: "a >"}
	noGroup := consumerDeclaration(rmqpb.ClientType_SIMPLE_CONSUMER, "", "T")
	badGroup := consumerDeclaration(rmqpb.ClientType_SIMPLE_CONSUMER, "a b", "T")
	noTopic := consumerDeclaration(rmqpb.ClientType_SIMPLE_CONSUMER, "G", "")
	badFilterType := consumerDeclaration(rmqpb.ClientType_SIMPLE_CONSUMER, "G", "T")
	badFilterType.GetSubscription().GetSubscriptions()[0].Expression.Type = 7
	noSubscription := &rmqpb.Settings{ClientType: rmqpb.ClientType_PUSH_CONSUMER.Enum()}
	for _, tc := range []struct {
		name string
		st   *rmqpb.Settings
		want rmqpb.Code
	}{
		{"no client type", &rmqpb.Settings{}, rmqpb.Code_UNRECOGNIZED_CLIENT_TYPE},
		{"unspecified client type", &rmqpb.Settings{ClientType: rmqpb.ClientType_CLIENT_TYPE_UNSPECIFIED.Enum()}, rmqpb.Code_UNRECOGNIZED_CLIENT_TYPE},
		{"unknown client type", &rmqpb.Settings{ClientType: rmqpb.ClientType(42).Enum()}, rmqpb.Code_UNRECOGNIZED_CLIENT_TYPE},
		{"lite push consumer", consumerDeclaration(rmqpb.ClientType_LITE_PUSH_CONSUMER, "G", "T"), rmqpb.Code_UNSUPPORTED},
		{"lite simple consumer", consumerDeclaration(rmqpb.ClientType_LITE_SIMPLE_CONSUMER, "G", "T"), rmqpb.Code_UNSUPPORTED},
		{"consumer without subscription", noSubscription, rmqpb.Code_BAD_REQUEST},
		{"consumer without group", noGroup, rmqpb.Code_ILLEGAL_CONSUMER_GROUP},
		{"consumer with an invalid group", badGroup, rmqpb.Code_ILLEGAL_CONSUMER_GROUP},
		{"unknown group without auto-creation", consumerDeclaration(rmqpb.ClientType_PUSH_CONSUMER, "Missing", "T"), rmqpb.Code_CONSUMER_GROUP_NOT_FOUND},
		{"subscription without topic", noTopic, rmqpb.Code_ILLEGAL_TOPIC},
		{"invalid SQL92 filter", sqlBad, rmqpb.Code_ILLEGAL_FILTER_EXPRESSION},
		{"unknown filter type", badFilterType, rmqpb.Code_ILLEGAL_FILTER_EXPRESSION},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, reply := e.telemetry("client@"+tc.name, tc.st)
			e.want(reply.GetStatus(), tc.want)
			if reply.GetCommand() != nil {
				t.Fatalf("refused settings answered with a command: %v", reply)
			}
			if _, ok := e.eng.Clients().Client(registry.ClientID("client@" + tc.name)); ok {
				t.Fatal("client registered with refused settings")
			}
		})
	}
}

// Every settings message gets its answer, also the periodic re-sync, and
// a changed declaration replaces the registration.
func TestTelemetrySettingsResync(t *testing.T) {
	e := defaultPubEnv(t)
	stream, _ := e.telemetry("producer@1", producerDeclaration("A"))
	for _, topics := range [][]string{{"A", "B"}, {"B"}} {
		if err := stream.Send(&rmqpb.TelemetryCommand{Command: &rmqpb.TelemetryCommand_Settings{Settings: producerDeclaration(topics...)}}); err != nil {
			t.Fatal(err)
		}
		reply, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		e.want(reply.GetStatus(), rmqpb.Code_OK)
		if n := len(reply.GetSettings().GetPublishing().GetTopics()); n != len(topics) {
			t.Fatalf("%d topics in the answer, want %d", n, len(topics))
		}
	}
	if ps := e.eng.Clients().Producers("A"); len(ps) != 0 {
		t.Fatalf("still a producer of A: %+v", ps)
	}
	if ps := e.eng.Clients().Producers("B"); len(ps) != 1 {
		t.Fatalf("producers of B: %+v", ps)
	}
}

func TestTelemetryOtherCommands(t *testing.T) {
	e := defaultPubEnv(t)
	stream, _ := e.telemetry("producer@1", producerDeclaration("A"))
	// Commands that need no answer: a bare status, the answer to a
	// verification, a stack trace, an empty command.
	for _, cmd := range []*rmqpb.TelemetryCommand{
		{Status: &rmqpb.Status{Code: rmqpb.Code_OK}},
		{Command: &rmqpb.TelemetryCommand_VerifyMessageResult{VerifyMessageResult: &rmqpb.VerifyMessageResult{Nonce: "n1"}}},
		{Command: &rmqpb.TelemetryCommand_ThreadStackTrace{ThreadStackTrace: &rmqpb.ThreadStackTrace{Nonce: "n2", ThreadStackTrace: proto.String("stack")}}},
		{},
	} {
		if err := stream.Send(cmd); err != nil {
			t.Fatal(err)
		}
	}
	// A request for a stack trace is answered with its nonce.
	if err := stream.Send(&rmqpb.TelemetryCommand{Command: &rmqpb.TelemetryCommand_PrintThreadStackTraceCommand{
		PrintThreadStackTraceCommand: &rmqpb.PrintThreadStackTraceCommand{Nonce: "n3"},
	}}); err != nil {
		t.Fatal(err)
	}
	reply, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	e.want(reply.GetStatus(), rmqpb.Code_OK)
	if reply.GetThreadStackTrace().GetNonce() != "n3" {
		t.Fatalf("answer %v", reply)
	}
	// The stream ends when the client ends it; the client stays registered
	// until it terminates or expires.
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != io.EOF {
		t.Fatalf("after CloseSend: %v, want EOF", err)
	}
	sess, ok := e.srv.sessions.Lookup("producer@1")
	if !ok {
		t.Fatal("session dropped when its stream ended")
	}
	e.eventually("the session's stream detached", func() bool { return !sess.HasStream() })
	if _, ok := e.eng.Clients().Client("producer@1"); !ok {
		t.Fatal("client unregistered when its stream ended")
	}
}

func TestTelemetryWithoutClientID(t *testing.T) {
	e := defaultPubEnv(t)
	stream, reply := e.telemetry("", producerDeclaration("A"))
	e.want(reply.GetStatus(), rmqpb.Code_CLIENT_ID_REQUIRED)
	if _, err := stream.Recv(); err != io.EOF {
		t.Fatalf("stream of a client without id: %v, want EOF", err)
	}
}

// Commands queued on a session reach the client on its newest stream.
func TestTelemetryCommandsReachNewestStream(t *testing.T) {
	e := defaultPubEnv(t)
	old, _ := e.telemetry("producer@1", producerDeclaration("A"))
	newer, _ := e.telemetry("producer@1", producerDeclaration("A"))
	sess, _ := e.srv.sessions.Lookup("producer@1")
	nonce := &rmqpb.TelemetryCommand{Command: &rmqpb.TelemetryCommand_ReconnectEndpointsCommand{ReconnectEndpointsCommand: &rmqpb.ReconnectEndpointsCommand{Nonce: "x"}}}
	if err := sess.Send(nonce); err != nil {
		t.Fatal(err)
	}
	got, err := newer.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if got.GetReconnectEndpointsCommand().GetNonce() != "x" {
		t.Fatalf("newest stream got %v", got)
	}
	// The older stream still answers settings.
	if err := old.Send(&rmqpb.TelemetryCommand{Command: &rmqpb.TelemetryCommand_Settings{Settings: producerDeclaration("A")}}); err != nil {
		t.Fatal(err)
	}
	reply, err := old.Recv()
	if err != nil {
		t.Fatal(err)
	}
	e.want(reply.GetStatus(), rmqpb.Code_OK)
}
