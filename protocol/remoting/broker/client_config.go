package broker

import (
	"context"
	"fmt"

	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// CHECK_CLIENT_CONFIG (46).
//
// Before it starts, a Java push consumer asks a broker of each topic it
// subscribes with an expression that is not a tag expression whether the
// broker can filter by it, and refuses to start unless the answer is
// SUCCESS. The body names the group and the subscription (no header).
// The answer, as Java's:
//
//	an expression that compiles              SUCCESS
//	SQL92 with SQL filtering switched off    SYSTEM_ERROR
//	an expression that does not parse,
//	an unknown expression type               SUBSCRIPTION_PARSE_FAILED

// CheckClientRequestBody is the body of CHECK_CLIENT_CONFIG.
type CheckClientRequestBody struct {
	ClientID         string                `json:"clientId"`
	Group            string                `json:"group"`
	SubscriptionData wire.SubscriptionData `json:"subscriptionData"`
}

func (b *Broker) checkClientConfig(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var body CheckClientRequestBody
	if err := wire.DecodeJSONBody(req.Body, &body); err != nil {
		return errorResponse(req, fmt.Errorf("broker: %s: %w", req.RequestCode(), err))
	}
	sub := body.SubscriptionData
	if _, err := b.filterFor(body.Group, sub.Topic, sub.ExpressionType, sub.SubString); err != nil {
		return errorResponse(req, err)
	}
	return success(req)
}
