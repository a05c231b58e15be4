package server_test

import (
	"context"
	"net"
	"testing"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/mqtt/packet"
	"github.com/karmanmq/karman/protocol/mqtt/route"
	"github.com/karmanmq/karman/protocol/mqtt/server"
)

// neverConfirmed is sync replication whose replicas never hold anything:
// the master stores sends but indexes none of them.
type neverConfirmed struct{}

func (neverConfirmed) CheckWrite() error                           { return nil }
func (neverConfirmed) WaitReplicated(context.Context, int64) error { return nil }
func (neverConfirmed) Confirmed(int64) int64                       { return 0 }

// A SUBSCRIBE is answered even when the engine cannot index what was
// appended before it (a master whose replicas confirm nothing): the wait
// for the dispatcher behind a new subscription's start is bounded.
func TestSubscribeWithUnconfirmedRecords(t *testing.T) {
	r := route.New()
	e, err := engine.Open(t.TempDir(), &engine.Options{Router: r, AutoCreateTopics: true, SegmentSize: 4 << 20, Replicator: neverConfirmed{}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	srv, err := server.New(e, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()

	pub, _ := dialRaw(t, ln.Addr().String(), packet.Version5, &packet.Connect{ClientID: "pub", CleanStart: true})
	pub.send(&packet.Publish{PacketID: 1, QoS: 1, Topic: "a/b", Payload: []byte("stored, not indexed")})
	if _, ok := pub.read().(*packet.Puback); !ok {
		t.Fatal("no PUBACK")
	}
	sub, _ := dialRaw(t, ln.Addr().String(), packet.Version5, &packet.Connect{ClientID: "sub", CleanStart: true})
	sub.send(&packet.Subscribe{PacketID: 1, Subscriptions: []packet.Subscription{{Filter: "a/#", QoS: 1}}})
	ack, ok := sub.read().(*packet.Suback)
	if !ok || len(ack.ReasonCodes) != 1 || ack.ReasonCodes[0] != packet.GrantedQoS1 {
		t.Fatalf("SUBACK %+v", ack)
	}
}
