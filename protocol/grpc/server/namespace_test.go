package server

import (
	"testing"
	"time"

	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"
)

// TestNamespaces checks that resources in a namespace are stored under
// their joined names, as RocketMQ's proxy stores them, and that clients
// get their own names back: routes echo the topic as asked, and received
// messages name their topic without the namespace.
func TestNamespaces(t *testing.T) {
	e := defaultPubEnv(t)
	ns := func(name string) *rmqpb.Resource { return &rmqpb.Resource{ResourceNamespace: "tenant", Name: name} }

	route, err := e.cli.QueryRoute(e.as("c@test"), &rmqpb.QueryRouteRequest{Topic: ns("Orders")})
	if err != nil {
		t.Fatal(err)
	}
	e.want(route.GetStatus(), rmqpb.Code_OK)
	for _, mq := range route.GetMessageQueues() {
		if mq.GetTopic().GetName() != "Orders" || mq.GetTopic().GetResourceNamespace() != "tenant" {
			t.Fatalf("route names its topic %v, want the client's", mq.GetTopic())
		}
	}
	if _, err := e.eng.Topic("tenant%Orders"); err != nil {
		t.Fatalf("the route query did not create tenant%%Orders: %v", err)
	}
	if _, err := e.eng.Topic("Orders"); err == nil {
		t.Fatal("a topic outside the namespace was created")
	}

	e.send(e.msg("Orders", "in tenant", func(m *rmqpb.Message) { m.Topic = ns("Orders") }))
	e.send(e.msg("Orders", "no namespace", nil))
	if got := e.visible("tenant%Orders"); len(got) != 1 || string(got[0].Body) != "in tenant" {
		t.Fatalf("tenant%%Orders holds %d messages, want the one sent in the namespace", len(got))
	}

	req := &rmqpb.ReceiveMessageRequest{
		Group:              ns("Billing"),
		MessageQueue:       &rmqpb.MessageQueue{Topic: ns("Orders")},
		FilterExpression:   &rmqpb.FilterExpression{Type: rmqpb.FilterType_TAG, Expression: "*"},
		BatchSize:          16,
		InvisibleDuration:  durationpb.New(30 * time.Second),
		LongPollingTimeout: durationpb.New(0),
	}
	st, msgs, err := receiveAll(e.as("c@test"), e.cli, req)
	if err != nil {
		t.Fatal(err)
	}
	e.want(st, rmqpb.Code_OK)
	if len(msgs) != 1 || string(msgs[0].GetBody()) != "in tenant" {
		t.Fatalf("received %d messages, want the one in the namespace", len(msgs))
	}
	if tp := msgs[0].GetTopic(); tp.GetName() != "Orders" || tp.GetResourceNamespace() != "tenant" {
		t.Fatalf("received message names its topic %v, want Orders in tenant", tp)
	}
	if _, err := e.eng.Group("tenant%Billing"); err != nil {
		t.Fatalf("the consumer group was not created in the namespace: %v", err)
	}

	ack, err := e.cli.AckMessage(e.as("c@test"), &rmqpb.AckMessageRequest{
		Group: ns("Billing"), Topic: ns("Orders"),
		Entries: []*rmqpb.AckMessageEntry{{MessageId: msgs[0].GetSystemProperties().GetMessageId(), ReceiptHandle: msgs[0].GetSystemProperties().GetReceiptHandle()}},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.want(ack.GetStatus(), rmqpb.Code_OK)
}

// TestNamespaceFromHeader checks that the x-mq-namespace header names the
// namespace of resources that carry none, as the Node.js client's route
// queries and consumer groups do, and that a resource's own namespace
// wins over it.
func TestNamespaceFromHeader(t *testing.T) {
	e := defaultPubEnv(t)
	ctx := metadata.AppendToOutgoingContext(e.as("c@test"), headerNamespace, "tenant")
	route, err := e.cli.QueryRoute(ctx, &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: "Plain"}})
	if err != nil {
		t.Fatal(err)
	}
	e.want(route.GetStatus(), rmqpb.Code_OK)
	if _, err := e.eng.Topic("tenant%Plain"); err != nil {
		t.Fatalf("the header's namespace was not applied: %v", err)
	}
	if tp := route.GetMessageQueues()[0].GetTopic(); tp.GetName() != "Plain" || tp.GetResourceNamespace() != "tenant" {
		t.Fatalf("route names its topic %v", tp)
	}
	if _, err := e.cli.QueryRoute(ctx, &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{ResourceNamespace: "other", Name: "Own"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.eng.Topic("other%Own"); err != nil {
		t.Fatalf("the resource's own namespace was not kept: %v", err)
	}
}
