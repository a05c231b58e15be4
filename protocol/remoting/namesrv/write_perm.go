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
	return p.setWritePerm(req, false)
}

func (p *Processor) addWritePerm(_ context.Context, _ *server.Conn, req *wire.Command) *wire.Command {
	return p.setWritePerm(req, true)
}

// setWritePerm gives the broker req names its write permission (add) or
// takes it away, and answers with the number of topics changed.
func (p *Processor) setWritePerm(req *wire.Command, add bool) *wire.Command {
	var h wire.BrokerNameRequestHeader
	if err := req.DecodeHeader(&h); err != nil {
		return badRequest(req, err)
	}
	resp := wire.NewResponse(req, wire.Success, "")
	var n int
	if add {
		n = p.routes.AddWritePerm(h.BrokerName)
		resp.SetHeader(&wire.AddWritePermResponseHeader{AddTopicCount: int32(n)})
	} else {
		n = p.routes.WipeWritePerm(h.BrokerName)
		resp.SetHeader(&wire.WipeWritePermResponseHeader{WipeTopicCount: int32(n)})
	}
	p.opts.Logger.Info("broker write permission changed", "broker", h.BrokerName, "writable", add, "topics", n)
	return resp
}
