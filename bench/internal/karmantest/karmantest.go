// Package karmantest runs a Karman broker in a test: an engine in a
// temporary directory, the remoting broker on a loopback port, and a
// minimal name server that routes every topic the broker has to it.
package karmantest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/remoting/broker"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Cluster is one broker and its name server.
type Cluster struct {
	// NameServer is the "ip:port" clients resolve routes at.
	NameServer string
	// Broker is the broker's "ip:port".
	Broker string
	// Engine is the broker's engine.
	Engine *engine.Engine
}

// Start runs a cluster until the test ends. Topics are auto-created with
// 4 queues.
func Start(t testing.TB, flush engine.FlushMode) *Cluster {
	t.Helper()
	return StartHooked(t, flush)
}

// StartHooked is Start with engine hooks installed (an ACL, say).
func StartHooked(t testing.TB, flush engine.FlushMode, hooks ...any) *Cluster {
	t.Helper()
	eng, err := engine.Open(t.TempDir(), &engine.Options{
		Flush:            flush,
		SegmentSize:      64 << 20,
		AutoCreateTopics: true,
		AutoCreateGroups: true,
		DefaultQueues:    4,
		Hooks:            hooks,
	})
	if err != nil {
		t.Fatal(err)
	}
	bln := listen(t)
	addr := bln.Addr().String()
	b := broker.New(eng, broker.Options{Addr: addr, AutoCreateTopics: true, AutoCreateGroups: true})
	mux := server.NewMux()
	b.Register(mux)
	bsrv := server.New(mux, server.Options{Busy: b.Busy, OnClose: b.OnClose})
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	go bsrv.Serve(bln)

	nln := listen(t)
	nmux := server.NewMux()
	nmux.HandleFunc(wire.GetRouteInfoByTopic, server.KindNamesrv, func(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
		return route(b, addr, req)
	})
	nsrv := server.New(nmux, server.Options{})
	go nsrv.Serve(nln)

	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := nsrv.Shutdown(ctx); err != nil {
			t.Errorf("name server shutdown: %v", err)
		}
		if err := bsrv.Shutdown(ctx); err != nil {
			t.Errorf("broker server shutdown: %v", err)
		}
		b.Close()
		if err := eng.Close(); err != nil {
			t.Errorf("engine close: %v", err)
		}
	})
	return &Cluster{NameServer: nln.Addr().String(), Broker: addr, Engine: eng}
}

func listen(t testing.TB) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// route answers GET_ROUTEINFO_BY_TOPIC from the broker's topic list.
func route(b *broker.Broker, addr string, req *wire.Command) *wire.Command {
	var h wire.GetRouteInfoRequestHeader
	if err := req.DecodeHeader(&h); err != nil {
		return wire.NewResponse(req, wire.InvalidParameter, err.Error())
	}
	name := b.Options().BrokerName
	for _, tc := range b.TopicConfigs() {
		if tc.TopicName != h.Topic {
			continue
		}
		rd := wire.TopicRouteData{
			QueueDatas: []wire.QueueData{{BrokerName: name, ReadQueueNums: tc.ReadQueueNums, WriteQueueNums: tc.WriteQueueNums, Perm: tc.Perm}},
			BrokerDatas: []wire.BrokerData{{Cluster: b.Options().ClusterName, BrokerName: name,
				BrokerAddrs: wire.BrokerAddrs{wire.MasterID: addr}}},
		}
		body, err := rd.Encode()
		if err != nil {
			return wire.NewResponse(req, wire.SystemError, err.Error())
		}
		resp := wire.NewResponse(req, wire.Success, "")
		resp.Body = body
		return resp
	}
	return wire.NewResponse(req, wire.TopicNotExist, "no route for "+h.Topic)
}
