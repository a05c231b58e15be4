package server_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/karmanmq/karman/server"
	_ "github.com/karmanmq/karman/server/modules/standard" // the name server, the broker, gRPC
)

// Example starts a server with the standard modules on loopback ports
// chosen at run time, sends a message with the RocketMQ Go client, and
// stops the server.
func Example() {
	dir, err := os.MkdirTemp("", "karman-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	opts, err := server.NewOptions() // every module compiled in
	if err != nil {
		log.Fatal(err)
	}
	err = opts.Flags.Parse([]string{
		"--data", dir, "--segment-size", "64MiB",
		"--http-addr", "127.0.0.1:0", "--namesrv-addr", "127.0.0.1:0",
		"--broker-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0",
		"--mqtt-addr", "127.0.0.1:0", "--mqtt-ws-addr", "off", "--mqtt-tls-addr", "off",
	})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(*opts)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := srv.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer srv.Stop(ctx)

	resp, err := http.Get("http://" + srv.Addr("http").String() + "/healthz")
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println("healthz:", resp.StatusCode)

	rlog.SetLogLevel("error")
	p, err := producer.NewDefaultProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{srv.Addr("namesrv").String()})),
		producer.WithGroupName("example"),
		producer.WithSendMsgTimeout(5*time.Second),
	)
	if err != nil {
		log.Fatal(err)
	}
	if err := p.Start(); err != nil {
		log.Fatal(err)
	}
	defer p.Shutdown()
	res, err := p.SendSync(ctx, primitive.NewMessage("Greetings", []byte("hello")))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("send:", res.Status == primitive.SendOK)
	// Output:
	// healthz: 200
	// send: true
}
