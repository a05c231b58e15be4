package namesrv

import (
	"context"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// registerBroker answers REGISTER_BROKER (103): it checks bodyCrc32,
// decodes the JSON or compressed body, records the registration and
// answers SUCCESS with haServerAddr and masterAddr (for replicas) and the
// ORDER_TOPIC_CONFIG namespace as a KVTable body when it has entries.
func (p *Processor) registerBroker(_ context.Context, c *server.Conn, req *wire.Command) *wire.Command {
	var h wire.RegisterBrokerRequestHeader
	if err := req.DecodeHeader(&h); err != nil {
		return badRequest(req, err)
	}
	if h.BrokerID < 0 {
		return errorResponse(req, wire.InvalidParameter, "invalid brokerId %d", h.BrokerID)
	}
	if h.BodyCRC32 != 0 {
		if sum := BodyCRC32(req.Body); sum != h.BodyCRC32 {
			return errorResponse(req, wire.SystemError, "crc32 not match: header %d, body %d", h.BodyCRC32, sum)
		}
	}
	body, err := DecodeRegisterBrokerBody(req.Body, h.Compressed)
	if err != nil {
		return badRequest(req, err)
	}
	r := Registration{
		Cluster:            h.ClusterName,
		BrokerName:         h.BrokerName,
		BrokerID:           h.BrokerID,
		Addr:               h.BrokerAddr,
		HAAddr:             h.HAServerAddr,
		ZoneName:           req.ExtFields["zoneName"],
		EnableActingMaster: h.EnableActingMaster,
		DataVersion:        body.DataVersion,
		Topics:             body.Topics,
		Partial:            len(req.Body) == 0 || req.ExtFields[ExtCompleteTopics] != "true",
	}
	if h.HeartbeatTimeoutMillis > 0 {
		r.Timeout = time.Duration(h.HeartbeatTimeoutMillis) * time.Millisecond
	}
	res, err := p.routes.Register(r)
	if err != nil {
		return errorResponse(req, wire.SystemError, "register broker failed: %v", err)
	}

	key := memberKey{h.ClusterName, h.BrokerAddr}
	p.mu.Lock()
	prev, known := p.members[key]
	p.members[key] = member{brokerName: h.BrokerName, brokerID: h.BrokerID, conn: c.ID()}
	p.mu.Unlock()
	if !known || prev.brokerName != h.BrokerName || prev.brokerID != h.BrokerID {
		p.opts.Logger.Info("broker registered", "cluster", h.ClusterName, "broker", h.BrokerName, "id", h.BrokerID,
			"addr", h.BrokerAddr, "topics", len(body.Topics), "partial", r.Partial)
	}

	resp := wire.NewResponse(req, wire.Success, "")
	resp.EncodeHeader(&wire.RegisterBrokerResponseHeader{HAServerAddr: res.MasterHAAddr, MasterAddr: res.MasterAddr})
	if order, ok := p.kv.List(OrderTopicConfigNamespace); ok {
		b, err := wire.EncodeJSONBody(wire.KVTable{Table: order})
		if err == nil {
			resp.Body = b
		}
	}
	return resp
}

// unregisterBroker answers UNREGISTER_BROKER (104) with SUCCESS.
func (p *Processor) unregisterBroker(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
	var h wire.UnregisterBrokerRequestHeader
	if err := req.DecodeHeader(&h); err != nil {
		return badRequest(req, err)
	}
	p.mu.Lock()
	delete(p.members, memberKey{h.ClusterName, h.BrokerAddr})
	p.mu.Unlock()
	if p.routes.Unregister(h.ClusterName, h.BrokerName, h.BrokerAddr, h.BrokerID) {
		p.opts.Logger.Info("broker unregistered", "cluster", h.ClusterName, "broker", h.BrokerName, "id", h.BrokerID, "addr", h.BrokerAddr)
	}
	return wire.NewResponse(req, wire.Success, "")
}
