package server

import (
	"slices"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/meta"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

func TestQueryRoute(t *testing.T) {
	e := defaultPubEnv(t)
	all := []rmqpb.MessageType{rmqpb.MessageType_NORMAL, rmqpb.MessageType_FIFO, rmqpb.MessageType_DELAY, rmqpb.MessageType_TRANSACTION}
	for _, tc := range []struct {
		topic meta.Topic
		perms []rmqpb.Permission
		types []rmqpb.MessageType
	}{
		{
			topic: meta.Topic{Name: "Plain", ReadQueues: 4, WriteQueues: 4},
			perms: []rmqpb.Permission{rmqpb.Permission_READ_WRITE, rmqpb.Permission_READ_WRITE, rmqpb.Permission_READ_WRITE, rmqpb.Permission_READ_WRITE},
			types: all,
		},
		{
			topic: meta.Topic{Name: "Mixed", ReadQueues: 1, WriteQueues: 1, MessageType: meta.MessageTypeMixed},
			perms: []rmqpb.Permission{rmqpb.Permission_READ_WRITE},
			types: all,
		},
		{
			topic: meta.Topic{Name: "Fifo", ReadQueues: 2, WriteQueues: 2, MessageType: meta.MessageTypeFIFO},
			perms: []rmqpb.Permission{rmqpb.Permission_READ_WRITE, rmqpb.Permission_READ_WRITE},
			types: []rmqpb.MessageType{rmqpb.MessageType_FIFO},
		},
		{
			topic: meta.Topic{Name: "Delay", ReadQueues: 1, WriteQueues: 1, MessageType: meta.MessageTypeDelay},
			perms: []rmqpb.Permission{rmqpb.Permission_READ_WRITE},
			types: []rmqpb.MessageType{rmqpb.MessageType_DELAY},
		},
		{
			topic: meta.Topic{Name: "Tx", ReadQueues: 1, WriteQueues: 1, MessageType: meta.MessageTypeTransaction},
			perms: []rmqpb.Permission{rmqpb.Permission_READ_WRITE},
			types: []rmqpb.MessageType{rmqpb.MessageType_TRANSACTION},
		},
		{
			topic: meta.Topic{Name: "Normal", ReadQueues: 2, WriteQueues: 3, MessageType: meta.MessageTypeNormal},
			perms: []rmqpb.Permission{rmqpb.Permission_READ_WRITE, rmqpb.Permission_READ_WRITE, rmqpb.Permission_WRITE},
			types: []rmqpb.MessageType{rmqpb.MessageType_NORMAL},
		},
		{
			topic: meta.Topic{Name: "ReadOnly", ReadQueues: 1, WriteQueues: 1, Perm: meta.PermRead},
			perms: []rmqpb.Permission{rmqpb.Permission_READ},
			types: all,
		},
	} {
		t.Run(tc.topic.Name, func(t *testing.T) {
			if err := e.eng.CreateTopic(tc.topic); err != nil {
				t.Fatal(err)
			}
			resp, err := e.cli.QueryRoute(e.as("client@1"), &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: tc.topic.Name}})
			if err != nil {
				t.Fatal(err)
			}
			e.want(resp.GetStatus(), rmqpb.Code_OK)
			if len(resp.GetMessageQueues()) != len(tc.perms) {
				t.Fatalf("%d queues, want %d", len(resp.GetMessageQueues()), len(tc.perms))
			}
			for i, mq := range resp.GetMessageQueues() {
				b := mq.GetBroker()
				addrs := b.GetEndpoints().GetAddresses()
				if mq.GetId() != int32(i) || mq.GetTopic().GetName() != tc.topic.Name || mq.GetPermission() != tc.perms[i] ||
					!slices.Equal(mq.GetAcceptMessageTypes(), tc.types) {
					t.Errorf("queue %d: %v", i, mq)
				}
				if b.GetName() != DefaultBrokerName || b.GetId() != 0 || b.GetEndpoints().GetScheme() != rmqpb.AddressScheme_IPv4 ||
					len(addrs) != 1 || addrs[0].GetHost() != "127.0.0.1" || addrs[0].GetPort() != int32(e.addr.Port) {
					t.Errorf("queue %d: broker %v", i, b)
				}
			}
		})
	}
}

// A producer started with a topic nobody created yet finds a route: the
// topic is created as its first send would create it.
func TestQueryRouteAutoCreates(t *testing.T) {
	e := newPubEnv(t, engine.Options{AutoCreateTopics: true}, Options{AutoCreateTopics: true, DefaultQueues: 3})
	resp, err := e.cli.QueryRoute(e.as("client@1"), &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: "Fresh"}})
	if err != nil {
		t.Fatal(err)
	}
	e.want(resp.GetStatus(), rmqpb.Code_OK)
	if n := len(resp.GetMessageQueues()); n != 3 {
		t.Fatalf("%d queues, want 3", n)
	}
	if cfg, err := e.eng.Topic("Fresh"); err != nil || cfg.Queues() != 3 || cfg.Perm != meta.PermRW {
		t.Fatalf("topic %+v, %v", cfg, err)
	}
	// System, retry and dead-letter topics are never created for a client.
	for _, name := range []string{"RMQ_SYS_SOMETHING", "%RETRY%G", "%DLQ%G", "TBW102"} {
		resp, err := e.cli.QueryRoute(e.as("client@1"), &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: name}})
		if err != nil {
			t.Fatal(err)
		}
		e.want(resp.GetStatus(), rmqpb.Code_TOPIC_NOT_FOUND)
	}
}

func TestQueryRouteUnknownTopic(t *testing.T) {
	e := newPubEnv(t, engine.Options{}, Options{})
	resp, err := e.cli.QueryRoute(e.as("client@1"), &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: "Nope"}})
	if err != nil {
		t.Fatal(err)
	}
	e.want(resp.GetStatus(), rmqpb.Code_TOPIC_NOT_FOUND)
	if _, err := e.eng.Topic("Nope"); err == nil {
		t.Fatal("topic created without auto-creation")
	}
}

// A server configured without an endpoint routes clients to the address
// they dialled.
func TestQueryRouteWithoutEndpoint(t *testing.T) {
	e := newPubEnv(t, engine.Options{AutoCreateTopics: true}, Options{Endpoint: "", AutoCreateTopics: true})
	e.srv.endpoint = &rmqpb.Endpoints{Scheme: rmqpb.AddressScheme_IPv4}
	dial := &rmqpb.Endpoints{Scheme: rmqpb.AddressScheme_DOMAIN_NAME, Addresses: []*rmqpb.Address{{Host: "mq.example", Port: 8081}, {Host: "other", Port: 1}}}
	resp, err := e.cli.QueryRoute(e.as("client@1"), &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: "T"}, Endpoints: dial})
	if err != nil {
		t.Fatal(err)
	}
	e.want(resp.GetStatus(), rmqpb.Code_OK)
	ep := resp.GetMessageQueues()[0].GetBroker().GetEndpoints()
	if ep.GetScheme() != rmqpb.AddressScheme_DOMAIN_NAME || len(ep.GetAddresses()) != 1 || ep.GetAddresses()[0].GetHost() != "mq.example" || ep.GetAddresses()[0].GetPort() != 8081 {
		t.Fatalf("endpoints %v", ep)
	}
}

// Options.Latency sees each unary call with its method and the code of
// its answer's status.
func TestLatencyObserved(t *testing.T) {
	type seen struct {
		method, code string
		d            time.Duration
	}
	got := make(chan seen, 4)
	e := newPubEnv(t, engine.Options{}, Options{Latency: func(method, code string, d time.Duration) { got <- seen{method, code, d} }})
	if _, err := e.cli.QueryRoute(e.as("client@1"), &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: "Nope"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s.method != "QueryRoute" || s.code != "TOPIC_NOT_FOUND" || s.d <= 0 {
			t.Fatalf("observed %+v", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the call was not observed")
	}
}
