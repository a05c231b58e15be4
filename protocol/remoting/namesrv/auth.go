package namesrv

import (
	"context"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/protocol/remoting/auth"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Authentication and authorization.
//
// When Options.Hooks holds an Authenticator or an Authorizer, the
// requests that change the name server's state for everyone (adminCodes)
// are checked before they run: their credentials (auth.Credentials) go
// to the Authenticators and an administration action on the cluster
// (hook.Cluster, named by the request's clusterName when it has one,
// else "") goes to the Authorizers. A refusal is NO_PERMISSION with the
// reason as the remark.
//
// Route and configuration queries are left open, neither authenticated
// nor authorized, as RocketMQ's name server leaves them: clients look
// routes up before they talk to any broker. Broker registration is left
// open too: a broker's Registrar sends no credentials, and the broker of
// this very process must keep registering when hooks are installed.
//
// With no Authenticator and no Authorizer, Mount routes the handlers
// unwrapped: nothing is paid.

// adminCodes maps each request code checked to the action it takes on
// the cluster.
var adminCodes = map[wire.RequestCode]hook.Action{
	wire.DeleteTopicInNamesrv:  hook.ActionDelete,
	wire.PutKVConfig:           hook.ActionUpdate,
	wire.DeleteKVConfig:        hook.ActionDelete,
	wire.WipeWritePermOfBroker: hook.ActionUpdate,
	wire.AddWritePermOfBroker:  hook.ActionUpdate,
}

// guard wraps f with authentication and authorization when code is an
// admin code and p's hooks guard requests, or returns f itself.
func (p *Processor) guard(code wire.RequestCode, f server.HandlerFunc) server.HandlerFunc {
	set := p.opts.Hooks
	if set == nil || !set.Guarded() {
		return f
	}
	action, ok := adminCodes[code]
	if !ok {
		return f
	}
	return func(ctx context.Context, c *server.Conn, req *wire.Command) *wire.Command {
		req.LoadExtFields()
		addr := auth.Addr(c)
		cl := &hook.Client{Protocol: auth.Protocol, Addr: addr}
		ctx = hook.NewContext(ctx, cl) // Authorizers read the client's address from it
		cr := auth.Credentials(req, addr, true)
		pr, err := set.Authenticate(ctx, cr)
		auth.Release(cr)
		if err != nil {
			return errorResponse(req, wire.NoPermission, "namesrv: %s: %v", req.RequestCode(), err)
		}
		cl.Principal = pr
		if err := set.Authorize(ctx, pr, action, hook.Cluster(req.ExtFields["clusterName"])); err != nil {
			return errorResponse(req, wire.NoPermission, "namesrv: %s: %v", req.RequestCode(), err)
		}
		return f(ctx, c, req)
	}
}
