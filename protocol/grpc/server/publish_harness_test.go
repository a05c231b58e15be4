package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// pubEnv is an engine in a temporary directory, a Server on it served by
// a grpc.Server on a loopback port, and a client of it: the harness of
// the publishing and client-lifecycle tests.
type pubEnv struct {
	t    *testing.T
	eng  *engine.Engine
	srv  *Server
	addr *net.TCPAddr
	cli  rmqpb.MessagingServiceClient
	seq  int // of message ids
}

// newPubEnv starts a server. Zero options get auto-creation of topics
// and groups, small segments and a loopback endpoint.
func newPubEnv(t *testing.T, eo engine.Options, so Options) *pubEnv {
	t.Helper()
	if eo.SegmentSize == 0 {
		eo.SegmentSize = 4 << 20
	}
	if eo.MaxMessageSize == 0 {
		eo.MaxMessageSize = 1 << 20
	}
	eng, srv, conn, addr := serveForTest(t, eo, so)
	return &pubEnv{t: t, eng: eng, srv: srv, addr: addr, cli: rmqpb.NewMessagingServiceClient(conn)}
}

// defaultPubEnv is newPubEnv with auto-creation on, as karman serve runs.
func defaultPubEnv(t *testing.T) *pubEnv {
	return newPubEnv(t, engine.Options{AutoCreateTopics: true, AutoCreateGroups: true}, Options{AutoCreateTopics: true, AutoCreateGroups: true})
}

// as returns a context whose calls name client id (none for "").
func (e *pubEnv) as(id string) context.Context {
	ctx, cancel := context.WithTimeout(e.t.Context(), 10*time.Second)
	e.t.Cleanup(cancel)
	if id == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, headerClientID, id, "x-mq-language", "HTTP", "x-mq-protocol", "v2")
}

// telemetry opens a telemetry stream of client id, declares st and
// returns the stream with the server's answer.
func (e *pubEnv) telemetry(id string, st *rmqpb.Settings) (grpc.BidiStreamingClient[rmqpb.TelemetryCommand, rmqpb.TelemetryCommand], *rmqpb.TelemetryCommand) {
	e.t.Helper()
	stream, err := e.cli.Telemetry(e.as(id))
	if err != nil {
		e.t.Fatal(err)
	}
	// io.EOF: the server ended the call before reading (a refused
	// client); its answer and status are still there to receive.
	if err := stream.Send(&rmqpb.TelemetryCommand{Command: &rmqpb.TelemetryCommand_Settings{Settings: st}}); err != nil && err != io.EOF {
		e.t.Fatal(err)
	}
	reply, err := stream.Recv()
	if err != nil {
		e.t.Fatal(err)
	}
	return stream, reply
}

// producer declares a producer of topics with client id and returns its
// telemetry stream.
func (e *pubEnv) producer(id string, topics ...string) grpc.BidiStreamingClient[rmqpb.TelemetryCommand, rmqpb.TelemetryCommand] {
	e.t.Helper()
	stream, reply := e.telemetry(id, producerDeclaration(topics...))
	e.want(reply.GetStatus(), rmqpb.Code_OK)
	return stream
}

// producerDeclaration is the settings a Node.js producer declares.
func producerDeclaration(topics ...string) *rmqpb.Settings {
	pub := &rmqpb.Publishing{ValidateMessageType: true}
	for _, t := range topics {
		pub.Topics = append(pub.Topics, &rmqpb.Resource{Name: t})
	}
	return &rmqpb.Settings{
		ClientType: rmqpb.ClientType_PRODUCER.Enum(),
		PubSub:     &rmqpb.Settings_Publishing{Publishing: pub},
		UserAgent:  &rmqpb.UA{Language: rmqpb.Language_NODE_JS, Version: "1.0.8"},
	}
}

// consumerDeclaration is the settings a consumer of group declares,
// subscribing topic with a tag expression.
func consumerDeclaration(kind rmqpb.ClientType, group, topic string) *rmqpb.Settings {
	return &rmqpb.Settings{
		ClientType: kind.Enum(),
		PubSub: &rmqpb.Settings_Subscription{Subscription: &rmqpb.Subscription{
			Group: &rmqpb.Resource{Name: group},
			Subscriptions: []*rmqpb.SubscriptionEntry{{
				Topic:      &rmqpb.Resource{Name: topic},
				Expression: &rmqpb.FilterExpression{Type: rmqpb.FilterType_TAG, Expression: "*"},
			}},
		}},
	}
}

// msg returns a NORMAL message of topic with a fresh id, that edit may
// change.
func (e *pubEnv) msg(topic, body string, edit func(*rmqpb.Message)) *rmqpb.Message {
	e.seq++
	m := &rmqpb.Message{
		Topic: &rmqpb.Resource{Name: topic},
		Body:  []byte(body),
		SystemProperties: &rmqpb.SystemProperties{
			MessageId:     fmt.Sprintf("01A0B1C2D3E4F5330A07A1B2C3%08X", e.seq),
			MessageType:   rmqpb.MessageType_NORMAL,
			BodyEncoding:  rmqpb.Encoding_IDENTITY,
			BornHost:      "test-host",
			BornTimestamp: timestamppb.Now(),
		},
	}
	if edit != nil {
		edit(m)
	}
	return m
}

func (e *pubEnv) fifo(topic, body, group string) *rmqpb.Message {
	return e.msg(topic, body, func(m *rmqpb.Message) {
		m.SystemProperties.MessageType = rmqpb.MessageType_FIFO
		m.SystemProperties.MessageGroup = proto.String(group)
	})
}

func (e *pubEnv) delay(topic, body string, at time.Time) *rmqpb.Message {
	return e.msg(topic, body, func(m *rmqpb.Message) {
		m.SystemProperties.MessageType = rmqpb.MessageType_DELAY
		m.SystemProperties.DeliveryTimestamp = timestamppb.New(at)
	})
}

func (e *pubEnv) tx(topic, body string) *rmqpb.Message {
	return e.msg(topic, body, func(m *rmqpb.Message) { m.SystemProperties.MessageType = rmqpb.MessageType_TRANSACTION })
}

// send sends one message and returns its entry, which must be OK.
func (e *pubEnv) send(m *rmqpb.Message) *rmqpb.SendResultEntry {
	e.t.Helper()
	resp, err := e.cli.SendMessage(e.as("producer@test"), &rmqpb.SendMessageRequest{Messages: []*rmqpb.Message{m}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.want(resp.GetStatus(), rmqpb.Code_OK)
	if len(resp.GetEntries()) != 1 {
		e.t.Fatalf("%d entries", len(resp.GetEntries()))
	}
	e.want(resp.GetEntries()[0].GetStatus(), rmqpb.Code_OK)
	return resp.GetEntries()[0]
}

// visible returns the messages of topic consumers can read, from every
// queue.
func (e *pubEnv) visible(topic string) []*message.Message {
	e.t.Helper()
	ctx := e.as("")
	if err := e.eng.WaitDispatched(ctx); err != nil {
		e.t.Fatal(err)
	}
	cfg, err := e.eng.Topic(topic)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []*message.Message
	for q := range cfg.Queues() {
		res, err := e.eng.Pull(ctx, topic, q, 0, 1000, nil)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, rec := range res.Records {
			m, _, err := message.DecodeStored(rec)
			if err != nil {
				e.t.Fatal(err)
			}
			out = append(out, m)
		}
	}
	return out
}

// eventually retries cond until it holds or 5 seconds pass.
func (e *pubEnv) eventually(what string, cond func() bool) {
	t := e.t
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// want fails the test unless st has code.
func (e *pubEnv) want(st *rmqpb.Status, code rmqpb.Code) {
	t := e.t
	t.Helper()
	if st.GetCode() != code {
		t.Fatalf("status %s %q, want %s", st.GetCode(), st.GetMessage(), code)
	}
}
