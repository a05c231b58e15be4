package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

// With Options.Groups, routes and assignments list every broker group
// serving a topic, each with its master's endpoint: this server's own
// from its engine, the others as Groups routes them.
func TestRoutesAcrossGroups(t *testing.T) {
	groups := map[string][]GroupRoute{
		"Shared": {
			{BrokerName: "broker-b", ReadQueues: 2, WriteQueues: 2, Perm: meta.PermRW, Endpoint: "10.0.0.2:8081"},
			{BrokerName: "broker-a", ReadQueues: 9, WriteQueues: 9, Perm: meta.PermRW, Endpoint: "10.0.0.9:8081"}, // this server's: ignored
			{BrokerName: "broker-c", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermWrite, Endpoint: "10.0.0.3:8081"},
			{BrokerName: "broker-d", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW, Endpoint: "no port"},
		},
		"Elsewhere": {{BrokerName: "broker-b", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRW, Endpoint: "10.0.0.2:8081"}},
	}
	e := newPubEnv(t, engine.Options{}, Options{Endpoint: "10.0.0.1:8081", BrokerName: "broker-a",
		Groups: func(_ context.Context, topic string) []GroupRoute { return groups[topic] }})
	if err := e.eng.CreateTopic(meta.Topic{Name: "Shared", ReadQueues: 2, WriteQueues: 2, MessageType: meta.MessageTypeFIFO}); err != nil {
		t.Fatal(err)
	}
	if err := e.eng.CreateGroup(meta.Group{Name: "fifo-group", FIFO: true}); err != nil {
		t.Fatal(err)
	}
	// "broker:id@endpoint permission types" of each queue.
	queue := func(mq *rmqpb.MessageQueue) string {
		a := mq.GetBroker().GetEndpoints().GetAddresses()[0]
		return fmt.Sprintf("%s:%d@%s:%d %s %v", mq.GetBroker().GetName(), mq.GetId(), a.GetHost(), a.GetPort(), mq.GetPermission(), mq.GetAcceptMessageTypes())
	}
	for _, tc := range []struct {
		topic string
		want  []string
	}{
		{"Shared", []string{
			"broker-a:0@10.0.0.1:8081 READ_WRITE [FIFO]", "broker-a:1@10.0.0.1:8081 READ_WRITE [FIFO]",
			"broker-b:0@10.0.0.2:8081 READ_WRITE [FIFO]", "broker-b:1@10.0.0.2:8081 READ_WRITE [FIFO]",
			"broker-c:0@10.0.0.3:8081 WRITE [FIFO]",
		}},
		// Held by another group only: its queues alone, not created here.
		{"Elsewhere", []string{"broker-b:0@10.0.0.2:8081 READ_WRITE [NORMAL FIFO DELAY TRANSACTION]"}},
	} {
		resp, err := e.cli.QueryRoute(e.as("client@1"), &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: tc.topic}})
		if err != nil {
			t.Fatal(err)
		}
		e.want(resp.GetStatus(), rmqpb.Code_OK)
		var got []string
		for _, mq := range resp.GetMessageQueues() {
			got = append(got, queue(mq))
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("route of %s:\n got %q\nwant %q", tc.topic, got, tc.want)
		}
	}
	if _, err := e.eng.Topic("Elsewhere"); err == nil {
		t.Error("a topic only another group holds was created here")
	}

	for _, tc := range []struct {
		group, topic string
		want         []string
	}{
		// One assignment per readable group; broker-c is write-only.
		{"plain", "Shared", []string{"broker-a:-1@10.0.0.1:8081 READ_WRITE [FIFO]", "broker-b:-1@10.0.0.2:8081 READ_WRITE [FIFO]"}},
		// A FIFO group gets each readable queue of each group.
		{"fifo-group", "Shared", []string{
			"broker-a:0@10.0.0.1:8081 READ_WRITE [FIFO]", "broker-a:1@10.0.0.1:8081 READ_WRITE [FIFO]",
			"broker-b:0@10.0.0.2:8081 READ_WRITE [FIFO]", "broker-b:1@10.0.0.2:8081 READ_WRITE [FIFO]",
		}},
		{"plain", "Elsewhere", []string{"broker-b:-1@10.0.0.2:8081 READ_WRITE [NORMAL FIFO DELAY TRANSACTION]"}},
	} {
		resp, err := e.cli.QueryAssignment(e.as("client@1"), &rmqpb.QueryAssignmentRequest{
			Topic: &rmqpb.Resource{Name: tc.topic}, Group: &rmqpb.Resource{Name: tc.group}})
		if err != nil {
			t.Fatal(err)
		}
		e.want(resp.GetStatus(), rmqpb.Code_OK)
		var got []string
		for _, a := range resp.GetAssignments() {
			got = append(got, queue(a.GetMessageQueue()))
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("assignments of %s for %s:\n got %q\nwant %q", tc.topic, tc.group, got, tc.want)
		}
	}

	// A topic no group holds is still TOPIC_NOT_FOUND.
	resp, err := e.cli.QueryRoute(e.as("client@1"), &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: "Nowhere"}})
	if err != nil {
		t.Fatal(err)
	}
	e.want(resp.GetStatus(), rmqpb.Code_TOPIC_NOT_FOUND)
}
