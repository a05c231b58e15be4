package namesrv_test

import (
	"context"
	"log"
	"net"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/namesrv"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Serve name-server requests from a route table and a KV store.
func ExampleProcessor() {
	var (
		routes namesrv.Routes   // the route table, through an adapter
		kv     namesrv.KVConfig // the configuration store
	)
	p := namesrv.New(routes, kv, namesrv.Options{})
	mux := server.NewMux()
	p.Mount(mux)
	srv := server.New(mux, server.Options{OnClose: p.ConnClosed})
	ln, err := net.Listen("tcp", ":9876")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln)
}

// Keep a broker registered while it runs.
func ExampleRegistrar() {
	topics := func() []namesrv.TopicConfig {
		return []namesrv.TopicConfig{
			{TopicName: "TopicA", ReadQueueNums: 4, WriteQueueNums: 4, Perm: wire.PermRead | wire.PermWrite},
			{TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: wire.PermRead | wire.PermWrite | wire.PermInherit},
		}
	}
	r, err := namesrv.NewRegistrar(namesrv.RegistrarOptions{
		NameServers: []string{"127.0.0.1:9876"},
		BrokerName:  "broker-a",
		BrokerAddr:  "127.0.0.1:10911",
		Topics:      topics,
	})
	if err != nil {
		log.Fatal(err)
	}
	r.Start() // registers now, then every 30 s

	// ... when a topic is created or deleted:
	r.Trigger()

	// On shutdown:
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.Close(ctx)
}
