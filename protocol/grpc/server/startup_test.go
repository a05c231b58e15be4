package server

import (
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/protobuf/proto"
)

// A client in its startup window gets the answer to its settings again
// after each route query, whether the query succeeds or not, and a
// client of several topics once more after the answer itself; a refused
// client gets its refusal again.
func TestSettingsAnswerRepeated(t *testing.T) {
	e := newPubEnv(t, engine.Options{}, Options{})
	if err := e.eng.CreateTopic(meta.Topic{Name: "Known", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW}); err != nil {
		t.Fatal(err)
	}
	stream, first := e.telemetry("p@1", producerDeclaration("Known", "Missing"))
	e.want(first.GetStatus(), rmqpb.Code_OK)
	next := func(what string) *rmqpb.TelemetryCommand {
		t.Helper()
		got, err := stream.Recv()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !proto.Equal(got, first) {
			t.Fatalf("%s: %v, want the first answer %v", what, got, first)
		}
		return got
	}
	next("the repeat for a client of two topics")
	for _, topic := range []string{"Known", "Missing"} {
		start := time.Now()
		if _, err := e.cli.QueryRoute(e.as("p@1"), &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: topic}}); err != nil {
			t.Fatal(err)
		}
		next("the repeat after the route query of " + topic)
		if d := time.Since(start); d < repeatDelay {
			t.Errorf("the answer came again %s after the route query of %s, want at least %s", d, topic, repeatDelay)
		}
	}

	refused, answer := e.telemetry("c@1", consumerDeclaration(rmqpb.ClientType_SIMPLE_CONSUMER, "NoSuchGroup", "Known"))
	e.want(answer.GetStatus(), rmqpb.Code_CONSUMER_GROUP_NOT_FOUND)
	if _, err := e.cli.QueryRoute(e.as("c@1"), &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: "Known"}}); err != nil {
		t.Fatal(err)
	}
	again, err := refused.Recv()
	if err != nil || !proto.Equal(again, answer) {
		t.Fatalf("after a route query, a refused client got %v, %v; want its refusal %v again", again, err, answer)
	}
}
