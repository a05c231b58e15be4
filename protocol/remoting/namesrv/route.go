package namesrv

import (
	"context"

	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// getRouteInfo answers GET_ROUTEINFO_BY_TOPIC (105): SUCCESS with the
// TopicRouteData JSON (brokerAddrs compact, master under "0"), or
// TOPIC_NOT_EXIST.
func (p *Processor) getRouteInfo(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
	var h wire.GetRouteInfoRequestHeader
	if err := req.DecodeHeader(&h); err != nil {
		return badRequest(req, err)
	}
	route, ok := p.routes.Route(h.Topic)
	if !ok {
		return errorResponse(req, wire.TopicNotExist, "No topic route info in name server for the topic: %s", h.Topic)
	}
	route.OrderTopicConf = ""
	if p.opts.OrderTopicConf {
		route.OrderTopicConf, _ = p.kv.Get(OrderTopicConfigNamespace, h.Topic)
	}
	route.FilterServerTable = nil // written as {}
	body, err := route.Encode()
	if err != nil {
		return errorResponse(req, wire.SystemError, "%v", err)
	}
	resp := wire.NewResponse(req, wire.Success, "")
	resp.Body = body
	return resp
}
