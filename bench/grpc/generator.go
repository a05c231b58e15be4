package grpc

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	grpclib "google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
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

// conn is one client connection: its own client id, telemetry stream and
// settings, as a RocketMQ 5 client has.
type conn struct {
	cc     *grpclib.ClientConn
	rpc    rmqpb.MessagingServiceClient
	md     metadata.MD
	cancel context.CancelFunc // ends the telemetry stream
}

// ctx returns a request context carrying the connection's metadata.
func (c *conn) ctx(ctx context.Context) context.Context {
	return metadata.NewOutgoingContext(ctx, c.md)
}

func (c *conn) close() {
	c.cancel()
	c.cc.Close()
}

// dial opens a connection as client number i and declares settings on its
// telemetry stream, returning once the server has answered them.
func (g *Generator) dial(ctx context.Context, i int, settings *rmqpb.Settings) (*conn, error) {
	cc, err := grpclib.NewClient(g.o.Addr,
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
	host, _ := os.Hostname()
	c := &conn{
		cc:  cc,
		rpc: rmqpb.NewMessagingServiceClient(cc),
		md: metadata.Pairs(
			"x-mq-client-id", fmt.Sprintf("%s@%d@%d@%s", host, os.Getpid(), i, g.run),
			"x-mq-protocol", "v2",
			"x-mq-language", "GOLANG",
			"x-mq-client-version", "karman-bench",
		),
	}
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.cancel = cancel
	if err := c.declare(tctx, settings); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// declare opens the telemetry stream, sends settings and waits for the
// server's settings. The stream stays open until the connection closes.
func (c *conn) declare(ctx context.Context, settings *rmqpb.Settings) error {
	stream, err := c.rpc.Telemetry(c.ctx(ctx))
	if err != nil {
		return fmt.Errorf("grpc bench: telemetry: %w", err)
	}
	if err := stream.Send(&rmqpb.TelemetryCommand{Command: &rmqpb.TelemetryCommand_Settings{Settings: settings}}); err != nil {
		return fmt.Errorf("grpc bench: telemetry: %w", err)
	}
	got := make(chan error, 1)
	go func() {
		for first := true; ; first = false {
			cmd, err := stream.Recv()
			if first {
				switch {
				case err != nil:
					got <- err
				case cmd.GetSettings() == nil:
					got <- fmt.Errorf("first command is not settings: %v", cmd)
				case cmd.GetStatus() != nil && cmd.GetStatus().GetCode() != rmqpb.Code_OK:
					got <- fmt.Errorf("settings refused: %v", cmd.GetStatus())
				default:
					got <- nil
				}
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case err := <-got:
		if err != nil {
			return fmt.Errorf("grpc bench: telemetry: %w", err)
		}
		return nil
	case <-time.After(settingsWait):
		return errors.New("grpc bench: telemetry: the server did not answer the client's settings")
	}
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
	resp, err := c.rpc.QueryRoute(c.ctx(ctx), &rmqpb.QueryRouteRequest{Topic: &rmqpb.Resource{Name: topic}})
	if err != nil {
		return nil, fmt.Errorf("grpc bench: route of %s: %w", topic, err)
	}
	if code := resp.GetStatus().GetCode(); code != rmqpb.Code_OK {
		return nil, fmt.Errorf("grpc bench: route of %s: %s %s", topic, code, resp.GetStatus().GetMessage())
	}
	return resp.GetMessageQueues(), nil
}
