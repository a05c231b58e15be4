package grpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	grpclib "google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	protobuf "google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Defaults of Options.
const (
	DefaultConsumerGroup = "karman_bench_grpc_consumer"
	DefaultQueues        = 8
)

// HTTP/2 flow-control windows of a connection and of each call on it,
// for what the server sends.
const (
	windowSize     = 1 << 20
	connWindowSize = 4 << 20
)

// settingsWait bounds the wait for the server's answer to a client's
// settings.
const settingsWait = 10 * time.Second

// Options configure a Generator.
type Options struct {
	// Addr is the "host:port" of the gRPC endpoint. Required.
	Addr string
	// Connections is the number of connections the producers (or
	// receivers) of a phase share; 0, the default, gives each its own.
	Connections int
	// ConsumerGroup names the group that receives. Default
	// DefaultConsumerGroup.
	ConsumerGroup string
	// Queues is the number of receivers of a consume phase when the
	// workload does not say. Default DefaultQueues.
	Queues int32
	// RequestTimeout bounds every request. Default 30 s.
	RequestTimeout time.Duration
	// Client is the gRPC client the generator speaks with: ClientKarman
	// (the default) or ClientGRPCGo.
	Client string
}

// Generator drives a RocketMQ 5 gRPC endpoint. It implements
// bench.Generator.
type Generator struct {
	o   Options
	run string // distinguishes the client ids of this generator
}

// New returns a generator for the endpoint at o.Addr. It connects when a
// phase starts.
func New(o Options) (*Generator, error) {
	if o.Addr == "" {
		return nil, errors.New("grpc bench: no endpoint address")
	}
	if o.Connections < 0 {
		return nil, fmt.Errorf("grpc bench: connections %d: want 0 (one each) or more", o.Connections)
	}
	switch o.Client {
	case "":
		o.Client = ClientKarman
	case ClientKarman, ClientGRPCGo:
	default:
		return nil, fmt.Errorf("grpc bench: client %q: want %s or %s", o.Client, ClientKarman, ClientGRPCGo)
	}
	if o.ConsumerGroup == "" {
		o.ConsumerGroup = DefaultConsumerGroup
	}
	if o.Queues <= 0 {
		o.Queues = DefaultQueues
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	return &Generator{o: o, run: strconv.FormatUint(rand.Uint64(), 36)}, nil
}

// Close releases nothing: connections live for one phase.
func (g *Generator) Close() error { return nil }

// Clients the generator can speak with (Options.Client).
const (
	// ClientKarman is the generator's own HTTP/2 client (h2.go).
	ClientKarman = "karman"
	// ClientGRPCGo is grpc-go's ClientConn.
	ClientGRPCGo = "grpc-go"
)

// channel carries the calls of one client connection.
type channel interface {
	// invoke makes a unary call, scanning the answer into resp.
	invoke(ctx context.Context, method string, req *encoded, resp scanner) error
	// serverStream makes a server-streaming call, scanning every answer
	// into resp.
	serverStream(ctx context.Context, method string, req *encoded, resp scanner) error
	// telemetry opens the telemetry stream with first as its first
	// message and scans the server's first answer into resp; the stream
	// stays open until the channel closes.
	telemetry(ctx context.Context, first *encoded, resp scanner) error
	close()
}

// conn is one client connection: its own client id, telemetry stream and
// settings, as a RocketMQ 5 client has.
type conn struct{ ch channel }

func (c *conn) close() { c.ch.close() }

// dial opens a connection as client number i and declares settings on its
// telemetry stream, returning once the server has answered them.
func (g *Generator) dial(ctx context.Context, i int, settings *rmqpb.Settings) (*conn, error) {
	host, _ := os.Hostname()
	md := metadata.Pairs(
		"x-mq-client-id", fmt.Sprintf("%s@%d@%d@%s", host, os.Getpid(), i, g.run),
		"x-mq-protocol", "v2",
		"x-mq-language", "GOLANG",
		"x-mq-client-version", "karman-bench",
	)
	var ch channel
	var err error
	if g.o.Client == ClientGRPCGo {
		ch, err = dialGRPCGo(g.o.Addr, md)
	} else {
		ch, err = dialH2(ctx, g.o.Addr, md)
	}
	if err != nil {
		return nil, err
	}
	c := &conn{ch: ch}
	if err := c.declare(ctx, settings); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// declare sends settings on the telemetry stream and waits for the
// server's settings.
func (c *conn) declare(ctx context.Context, settings *rmqpb.Settings) error {
	first, err := encode(&rmqpb.TelemetryCommand{Command: &rmqpb.TelemetryCommand_Settings{Settings: settings}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, settingsWait)
	defer cancel()
	var cmd rmqpb.TelemetryCommand
	if err := c.ch.telemetry(ctx, first, protoReply{&cmd}); err != nil {
		return fmt.Errorf("grpc bench: telemetry: %w", err)
	}
	switch {
	case cmd.GetSettings() == nil:
		return fmt.Errorf("grpc bench: telemetry: first command is not settings: %v", &cmd)
	case cmd.GetStatus() != nil && cmd.GetStatus().GetCode() != rmqpb.Code_OK:
		return fmt.Errorf("grpc bench: telemetry: settings refused: %v", cmd.GetStatus())
	}
	return nil
}

// protoReply scans an answer by decoding it into a protocol buffer.
type protoReply struct{ m protobuf.Message }

func (r protoReply) scan(b []byte) error { return protobuf.Unmarshal(b, r.m) }

// grpcGoChannel is a channel on grpc-go's ClientConn.
type grpcGoChannel struct {
	cc     *grpclib.ClientConn
	md     metadata.MD
	cancel context.CancelFunc // ends the telemetry stream
}

func dialGRPCGo(addr string, md metadata.MD) (*grpcGoChannel, error) {
	cc, err := grpclib.NewClient(addr,
		grpclib.WithTransportCredentials(insecure.NewCredentials()),
		grpclib.WithDefaultCallOptions(grpclib.ForceCodecV2(newCodec())),
		// Fixed windows, as the server has: no bandwidth-estimating ping
		// per response.
		grpclib.WithInitialWindowSize(windowSize),
		grpclib.WithInitialConnWindowSize(connWindowSize),
	)
	if err != nil {
		return nil, fmt.Errorf("grpc bench: %w", err)
	}
	return &grpcGoChannel{cc: cc, md: md, cancel: func() {}}, nil
}

func (c *grpcGoChannel) invoke(ctx context.Context, method string, req *encoded, resp scanner) error {
	return c.cc.Invoke(metadata.NewOutgoingContext(ctx, c.md), method, req, resp)
}

func (c *grpcGoChannel) serverStream(ctx context.Context, method string, req *encoded, resp scanner) error {
	ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(ctx, c.md))
	defer cancel()
	stream, err := c.cc.NewStream(ctx, &grpclib.StreamDesc{ServerStreams: true}, method)
	if err != nil {
		return err
	}
	if err := stream.SendMsg(req); err != nil {
		return err
	}
	if err := stream.CloseSend(); err != nil {
		return err
	}
	for {
		if err := stream.RecvMsg(resp); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

func (c *grpcGoChannel) telemetry(ctx context.Context, first *encoded, resp scanner) error {
	sctx, cancel := context.WithCancel(metadata.NewOutgoingContext(context.Background(), c.md))
	c.cancel = cancel
	stream, err := c.cc.NewStream(sctx, &grpclib.StreamDesc{ServerStreams: true, ClientStreams: true}, rmqpb.MessagingService_Telemetry_FullMethodName)
	if err != nil {
		return err
	}
	if err := stream.SendMsg(first); err != nil {
		return err
	}
	got := make(chan error, 1)
	go func() {
		got <- stream.RecvMsg(resp)
		for stream.RecvMsg(protoReply{new(rmqpb.TelemetryCommand)}) == nil {
		}
	}()
	select {
	case err := <-got:
		return err
	case <-ctx.Done():
		return errors.New("the server did not answer the client's settings")
	}
}

func (c *grpcGoChannel) close() {
	c.cancel()
	c.cc.Close()
}

// pool is the connections of one phase.
type pool []*conn

// connect dials n connections declaring settings.
func (g *Generator) connect(ctx context.Context, n int, settings *rmqpb.Settings) (pool, error) {
	p := make(pool, 0, n)
	for i := range n {
		c, err := g.dial(ctx, i, settings)
		if err != nil {
			p.close()
			return nil, err
		}
		p = append(p, c)
	}
	return p, nil
}

// get returns the connection worker i uses.
func (p pool) get(i int) *conn { return p[i%len(p)] }

func (p pool) close() {
	var wg sync.WaitGroup
	for _, c := range p {
		wg.Go(c.close)
	}
	wg.Wait()
}

// connsFor returns the connection count for workers goroutines.
func (g *Generator) connsFor(workers int) int {
	if g.o.Connections > 0 {
		return min(g.o.Connections, workers)
	}
	return workers
}

func producerSettings(topic string) *rmqpb.Settings {
	return &rmqpb.Settings{
		ClientType:     rmqpb.ClientType_PRODUCER.Enum(),
		RequestTimeout: durationpb.New(3 * time.Second),
		PubSub: &rmqpb.Settings_Publishing{Publishing: &rmqpb.Publishing{
			Topics:              []*rmqpb.Resource{{Name: topic}},
			ValidateMessageType: true,
		}},
		UserAgent: &rmqpb.UA{Language: rmqpb.Language_GOLANG, Version: "karman-bench"},
	}
}

func consumerSettings(group, topic string) *rmqpb.Settings {
	return &rmqpb.Settings{
		ClientType:     rmqpb.ClientType_SIMPLE_CONSUMER.Enum(),
		RequestTimeout: durationpb.New(3 * time.Second),
		PubSub: &rmqpb.Settings_Subscription{Subscription: &rmqpb.Subscription{
			Group: &rmqpb.Resource{Name: group},
			Subscriptions: []*rmqpb.SubscriptionEntry{{
				Topic:      &rmqpb.Resource{Name: topic},
				Expression: &rmqpb.FilterExpression{Type: rmqpb.FilterType_TAG, Expression: "*"},
			}},
			LongPollingTimeout: durationpb.New(5 * time.Second),
		}},
		UserAgent: &rmqpb.UA{Language: rmqpb.Language_GOLANG, Version: "karman-bench"},
	}
}

// queryRoute returns the topic's route, creating the topic where the
// server auto-creates topics.
func (g *Generator) queryRoute(ctx context.Context, c *conn, topic string) ([]*rmqpb.MessageQueue, error) {
	ctx, cancel := context.WithTimeout(ctx, g.o.RequestTimeout)
	defer cancel()
	req, err := encode(&rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: topic}})
	if err != nil {
		return nil, err
	}
	var resp rmqpb.QueryRouteResponse
	if err := c.ch.invoke(ctx, rmqpb.MessagingService_QueryRoute_FullMethodName, req, protoReply{&resp}); err != nil {
		return nil, fmt.Errorf("grpc bench: route of %s: %w", topic, err)
	}
	if code := resp.GetStatus().GetCode(); code != rmqpb.Code_OK {
		return nil, fmt.Errorf("grpc bench: route of %s: %s %s", topic, code, resp.GetStatus().GetMessage())
	}
	return resp.GetMessageQueues(), nil
}
