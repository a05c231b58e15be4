package broker

import (
	"context"
	"testing"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// fakeConsumer answers the requests a broker passes on as a Go consumer
// does, and records what it was asked.
func fakeConsumer(asked chan<- *wire.Command, answer func(req *wire.Command) *wire.Command) peer.Handler {
	return peer.HandlerFunc(func(ctx context.Context, req *wire.Command) *wire.Command {
		switch req.RequestCode() {
		case wire.GetConsumerRunningInfo, wire.ConsumeMessageDirectly:
			asked <- req
			return answer(req)
		}
		return nil
	})
}

// An administration tool asks the broker for a consumer's running info or
// to have it consume a message; the broker passes the request on to that
// consumer's connection and the consumer's answer back.
func TestConsumerRelay(t *testing.T) {
	h := newHarness(t)
	asked := make(chan *wire.Command, 4)
	client := h.dial(fakeConsumer(asked, func(req *wire.Command) *wire.Command {
		resp := wire.NewResponse(req, wire.Success, "")
		resp.Body = []byte(`{"code":` + req.ExtFields["clientId"] + `}`)
		return resp
	}))
	heartbeat(t, client, "42", "g", "TopicR", "*")
	admin := h.dial(nil)

	resp := invoke(t, admin, request(wire.GetConsumerRunningInfo, &wire.GetConsumerRunningInfoRequestHeader{ConsumerGroup: "g", ClientID: "42"}, nil))
	wantCode(t, resp, wire.Success)
	if string(resp.Body) != `{"code":42}` {
		t.Fatalf("running info %q, want the consumer's answer", resp.Body)
	}
	if got := <-asked; got.ExtFields["consumerGroup"] != "g" || got.ExtFields["clientId"] != "42" {
		t.Fatalf("the consumer was asked %v", got.ExtFields)
	}

	sent := h.send(client, "TopicR", 0, "direct")
	msgID := sent.ExtFields["msgId"]
	resp = invoke(t, admin, request(wire.ConsumeMessageDirectly, &wire.ConsumeMessageDirectlyRequestHeader{ConsumerGroup: "g", ClientID: "42", MsgID: msgID}, nil))
	wantCode(t, resp, wire.Success)
	got := <-asked
	if got.ExtFields["msgId"] != msgID || got.ExtFields["brokerName"] != h.b.opts.BrokerName {
		t.Fatalf("the consumer was asked %v", got.ExtFields)
	}
	if msgs := records(t, got.Body); len(msgs) != 1 || string(msgs[0].Body) != "direct" {
		t.Fatalf("the consumer got %d messages", len(msgs))
	}

	for _, tt := range []struct {
		name string
		req  *wire.Command
		want wire.ResponseCode
	}{
		{"unknown client", request(wire.GetConsumerRunningInfo, &wire.GetConsumerRunningInfoRequestHeader{ConsumerGroup: "g", ClientID: "7"}, nil), wire.SystemError},
		{"unknown group", request(wire.GetConsumerRunningInfo, &wire.GetConsumerRunningInfoRequestHeader{ConsumerGroup: "other", ClientID: "42"}, nil), wire.SystemError},
		{"bad message id", request(wire.ConsumeMessageDirectly, &wire.ConsumeMessageDirectlyRequestHeader{ConsumerGroup: "g", ClientID: "42", MsgID: "zz"}, nil), wire.InvalidParameter},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := invoke(t, admin, tt.req)
			wantCode(t, resp, tt.want)
			if resp.Remark == "" {
				t.Error("no remark")
			}
		})
	}
}

// A consumer that does not answer in time is CONSUME_MSG_TIMEOUT, and the
// broker keeps serving.
func TestConsumerRelayTimeout(t *testing.T) {
	h := newHarnessWith(t, harnessOptions{
		engine: engine.Options{AutoCreateTopics: true, AutoCreateGroups: true},
		broker: Options{AutoCreateTopics: true, AutoCreateGroups: true, ClientCallTimeout: 100 * time.Millisecond},
	})
	release := make(chan struct{})
	defer close(release)
	asked := make(chan *wire.Command, 1)
	client := h.dial(fakeConsumer(asked, func(req *wire.Command) *wire.Command {
		<-release
		return nil
	}))
	heartbeat(t, client, "42", "g", "TopicR", "*")
	admin := h.dial(nil)
	resp := invoke(t, admin, request(wire.GetConsumerRunningInfo, &wire.GetConsumerRunningInfoRequestHeader{ConsumerGroup: "g", ClientID: "42"}, nil))
	wantCode(t, resp, wire.ConsumeMsgTimeout)
	<-asked
	h.send(admin, "TopicR", 0, "still serving")
}
