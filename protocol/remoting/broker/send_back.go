package broker

import (
	"context"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/message"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// consumerSendMsgBack serves CONSUMER_SEND_MSG_BACK (36), a consumer's
// "consume later" for the message stored at a commit-log offset: the
// engine stores a copy under %RETRY%<group>, due after the group's backoff
// (or the delay level the client asked for), or in %DLQ%<group> once the
// message was delivered maxReconsumeTimes+1 times (delayLevel < 0 sends
// it there at once). Any error makes the client fall back to sending the
// message to the retry topic itself.
func (b *Broker) consumerSendMsgBack(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.ConsumerSendMsgBackRequestHeader
	if err := decodeHeader(req, &h); err != nil {
		return errorResponse(req, err)
	}
	if _, err := b.group(ctx, h.Group); err != nil {
		return errorResponse(req, err)
	}
	o := engine.SendBackOptions{DelayLevel: h.DelayLevel}
	if h.MaxReconsumeTimes != nil && *h.MaxReconsumeTimes >= 0 {
		o.MaxAttempts = *h.MaxReconsumeTimes + 1
	}
	if err := b.eng.SendBack(ctx, h.Group, h.Offset, o); err != nil {
		return errorResponse(req, err)
	}
	b.noteExisting(message.RetryTopic(h.Group))
	b.noteExisting(message.DLQTopic(h.Group))
	return success(req)
}
