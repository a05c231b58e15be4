package namesrv

import (
	"context"

	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// WIPE_WRITE_PERM_OF_BROKER (205) takes the write permission of a broker
// group away in every topic it serves, so that producers stop sending to
// it while consumers drain it (before maintenance);
// ADD_WRITE_PERM_OF_BROKER (327) gives it back. Each answers with the
// number of topics it changed (wipeTopicCount, addTopicCount); a broker
// the name server does not know changes none.

func (p *Processor) wipeWritePerm(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
	var h wire.BrokerNameRequestHeader
	if err := req.DecodeHeader(&h); err != nil {
		return badRequest(req, err)
	}
	n := p.routes.WipeWritePerm(h.BrokerName)
	p.opts.Logger.Info("broker write permission wiped", "broker", h.BrokerName, "topics", n)
	resp := wire.NewResponse(req, wire.Success, "")
	resp.SetHeader(&wire.WipeWritePermResponseHeader{WipeTopicCount: int32(n)})
	return resp
}

func (p *Processor) addWritePerm(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
	var h wire.BrokerNameRequestHeader
	if err := req.DecodeHeader(&h); err != nil {
		return badRequest(req, err)
	}
	n := p.routes.AddWritePerm(h.BrokerName)
	p.opts.Logger.Info("broker write permission added", "broker", h.BrokerName, "topics", n)
	resp := wire.NewResponse(req, wire.Success, "")
	resp.SetHeader(&wire.AddWritePermResponseHeader{AddTopicCount: int32(n)})
	return resp
}
