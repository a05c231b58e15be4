package auth

import (
	"net/netip"

	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/hook/rmqauth"
	"github.com/karmanmq/karman/protocol/remoting/server"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// Protocol is the name the remoting front-ends give hook.Credentials and
// hook.Client.
const Protocol = "remoting"

// Addr returns the client's address of c, unmapped, or the zero AddrPort
// when it does not parse.
func Addr(c *server.Conn) netip.AddrPort {
	ap, err := netip.ParseAddrPort(c.RemoteAddr())
	if err != nil {
		return netip.AddrPort{}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// Credentials returns the ACL credentials of req (the extFields
// AccessKey, Signature and SecurityToken, and the content RocketMQ
// signs: rmqauth.RemotingContent) from a client at addr. req's extFields
// must be loaded (wire.Command.LoadExtFields). A request without a
// signature gets no Algorithm and no Content.
func Credentials(req *wire.Command, addr netip.AddrPort) *hook.Credentials {
	ext := req.ExtFields
	cr := &hook.Credentials{
		Protocol:      Protocol,
		Addr:          addr,
		AccessKey:     ext[rmqauth.FieldAccessKey],
		Signature:     ext[rmqauth.FieldSignature],
		SecurityToken: ext[rmqauth.FieldSecurityToken],
		Fields:        ext,
	}
	if cr.Signature != "" {
		cr.Algorithm = rmqauth.AlgorithmRemoting
		cr.Content = rmqauth.RemotingContent(ext, req.Body)
	}
	return cr
}

// Sign adds the ACL credentials of accessKey to req, as RocketMQ's
// client RPC hook does: the AccessKey extField, then the Signature of
// every extField and the body under secretKey. Sign req last: a field
// or body changed afterwards breaks the signature.
func Sign(req *wire.Command, accessKey, secretKey string) {
	req.LoadExtFields()
	if req.ExtFields == nil {
		req.ExtFields = map[string]string{}
	}
	delete(req.ExtFields, rmqauth.FieldSignature)
	req.ExtFields[rmqauth.FieldAccessKey] = accessKey
	req.ExtFields[rmqauth.FieldSignature] = rmqauth.SignRemoting(rmqauth.RemotingContent(req.ExtFields, req.Body), secretKey)
}
