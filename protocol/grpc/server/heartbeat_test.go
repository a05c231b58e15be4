package server

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/grpc/rmqpb"
)

func TestHeartbeat(t *testing.T) {
	e := defaultPubEnv(t)
	// Before its settings, a client's heartbeat is answered OK and
	// registers nothing.
	resp, err := e.cli.Heartbeat(e.as("early@1"), &rmqpb.HeartbeatRequest{ClientType: rmqpb.ClientType_PRODUCER})
	if err != nil {
		t.Fatal(err)
	}
	e.want(resp.GetStatus(), rmqpb.Code_OK)
	if _, ok := e.eng.Clients().Client("early@1"); ok {
		t.Fatal("registered without settings")
	}

	e.telemetry("consumer@1", consumerDeclaration(rmqpb.ClientType_PUSH_CONSUMER, "G", "T"))
	first, ok := e.eng.Clients().Client("consumer@1")
	if !ok {
		t.Fatal("not registered by its settings")
	}
	time.Sleep(5 * time.Millisecond)
	resp, err = e.cli.Heartbeat(e.as("consumer@1"), &rmqpb.HeartbeatRequest{ClientType: rmqpb.ClientType_PUSH_CONSUMER, Group: &rmqpb.Resource{Name: "G"}})
	if err != nil {
		t.Fatal(err)
	}
	e.want(resp.GetStatus(), rmqpb.Code_OK)
	again, ok := e.eng.Clients().Client("consumer@1")
	if !ok || !again.LastHeartbeat.After(first.LastHeartbeat) {
		t.Fatalf("heartbeat did not renew the registration: %v then %v", first.LastHeartbeat, again.LastHeartbeat)
	}
	if ids := e.eng.Clients().ConsumerIDs("G"); len(ids) != 1 {
		t.Fatalf("consumers of G: %v", ids)
	}
	// Its settings named no user agent: the language is its heartbeat's
	// x-mq-language header.
	if again.Language != "HTTP" || again.Version != "" {
		t.Fatalf("consumer@1's language and version: %q %q, want HTTP from its header", again.Language, again.Version)
	}
	// A producer's are its settings' user agent.
	e.producer("producer@1", "T")
	if p, ok := e.eng.Clients().Client("producer@1"); !ok || p.Language != "NODE_JS" || p.Version != "1.0.8" {
		t.Fatalf("producer@1 = %+v %v, want NODE_JS 1.0.8", p, ok)
	}

	resp, err = e.cli.Heartbeat(e.as(""), &rmqpb.HeartbeatRequest{})
	if err != nil {
		t.Fatal(err)
	}
	e.want(resp.GetStatus(), rmqpb.Code_CLIENT_ID_REQUIRED)
}

func TestNotifyClientTermination(t *testing.T) {
	e := defaultPubEnv(t)
	stream, _ := e.telemetry("consumer@1", consumerDeclaration(rmqpb.ClientType_SIMPLE_CONSUMER, "G", "T"))
	sess, _ := e.srv.sessions.Lookup("consumer@1")
	resp, err := e.cli.NotifyClientTermination(e.as("consumer@1"), &rmqpb.NotifyClientTerminationRequest{Group: &rmqpb.Resource{Name: "G"}})
	if err != nil {
		t.Fatal(err)
	}
	e.want(resp.GetStatus(), rmqpb.Code_OK)
	if _, ok := e.eng.Clients().Client("consumer@1"); ok {
		t.Fatal("still registered")
	}
	if ids := e.eng.Clients().ConsumerIDs("G"); len(ids) != 0 {
		t.Fatalf("consumers of G: %v", ids)
	}
	select {
	case <-sess.Gone():
	default:
		t.Fatal("session not dropped")
	}
	// The stream stays open for the client to end (the server ending it
	// would do so at once): what the client still writes on it is
	// ignored, registers nothing and gets no answer.
	ended := make(chan error, 1)
	go func() {
		cmd, err := stream.Recv()
		if err == nil {
			err = fmt.Errorf("got %v", cmd)
		}
		ended <- err
	}()
	select {
	case err := <-ended:
		t.Fatalf("the telemetry stream of a terminated client ended before the client ended it: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := stream.Send(&rmqpb.TelemetryCommand{Command: &rmqpb.TelemetryCommand_Settings{
		Settings: consumerDeclaration(rmqpb.ClientType_SIMPLE_CONSUMER, "G", "T")}}); err != nil {
		t.Fatal(err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if err := <-ended; err != io.EOF {
		t.Fatalf("telemetry stream after termination: %v, want EOF", err)
	}
	if _, ok := e.eng.Clients().Client("consumer@1"); ok {
		t.Fatal("registered again by settings sent after termination")
	}

	resp, err = e.cli.NotifyClientTermination(e.as(""), &rmqpb.NotifyClientTerminationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	e.want(resp.GetStatus(), rmqpb.Code_CLIENT_ID_REQUIRED)
}

// The telemetry stream of a client that terminated but does not end it
// is ended by the server after TerminationGrace.
func TestTerminationGrace(t *testing.T) {
	const grace = 200 * time.Millisecond
	e := newPubEnv(t, engine.Options{AutoCreateTopics: true}, Options{AutoCreateTopics: true, TerminationGrace: grace})
	stream := e.producer("leaving@1", "T")
	start := time.Now()
	resp, err := e.cli.NotifyClientTermination(e.as("leaving@1"), &rmqpb.NotifyClientTerminationRequest{})
	if err != nil {
		t.Fatal(err)
	}
	e.want(resp.GetStatus(), rmqpb.Code_OK)
	if cmd, err := stream.Recv(); err != io.EOF {
		t.Fatalf("telemetry stream after termination: %v, %v; want EOF", cmd, err)
	}
	if d := time.Since(start); d < grace {
		t.Fatalf("stream ended %s after termination, before the grace of %s", d, grace)
	}
}

// A client that stops heartbeating is forgotten after ClientExpiry, even
// with its telemetry stream open; a client that keeps heartbeating is not.
func TestClientExpiry(t *testing.T) {
	// The expiry leaves a loaded machine room for many missed beats.
	const expiry = time.Second
	e := newPubEnv(t, engine.Options{AutoCreateTopics: true}, Options{AutoCreateTopics: true, ClientExpiry: expiry})
	silent := e.producer("silent@1", "T")
	e.producer("alive@1", "T")
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(expiry / 20)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				if _, err := e.cli.Heartbeat(e.as("alive@1"), &rmqpb.HeartbeatRequest{ClientType: rmqpb.ClientType_PRODUCER}); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	defer func() { close(quit); <-done }()

	if _, err := silent.Recv(); err != io.EOF {
		t.Fatalf("telemetry stream of an expired client: %v, want EOF", err)
	}
	if _, ok := e.eng.Clients().Client("silent@1"); ok {
		t.Fatal("expired client still registered")
	}
	if _, ok := e.srv.sessions.Lookup("silent@1"); ok {
		t.Fatal("expired client's session kept")
	}
	time.Sleep(expiry * 3 / 2) // a window in which a silent client would expire
	if _, ok := e.eng.Clients().Client("alive@1"); !ok {
		t.Fatal("heartbeating client expired")
	}
	if ps := e.eng.Clients().Producers("T"); len(ps) != 1 || ps[0].ID != "alive@1" {
		t.Fatalf("producers of T: %+v", ps)
	}
}
