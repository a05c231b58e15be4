package auth

import (
	"encoding/base64"
	"net/netip"
	"sync"

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
func Addr(c *server.Conn) netip.AddrPort { return c.AddrPort() }

// Credentials returns the ACL credentials of req (the extFields
// AccessKey, Signature and SecurityToken, and the content RocketMQ
// signs: rmqauth.RemotingContent) from a client at addr. With fields,
// Fields holds every extField (they are loaded into req.ExtFields);
// without, Fields is nil and deferred extFields are read in place (see
// hook.Set.NeedsFields). A request without a signature gets no Algorithm
// and no Content. Release gives the credentials back once the
// Authenticators are done with them.
func Credentials(req *wire.Command, addr netip.AddrPort, fields bool) *hook.Credentials {
	cr := credentials.Get().(*hook.Credentials)
	content := cr.Content[:0]
	*cr = hook.Credentials{
		Protocol:      Protocol,
		Addr:          addr,
		AccessKey:     req.ExtField(rmqauth.FieldAccessKey),
		Signature:     req.ExtFieldOnce(rmqauth.FieldSignature),
		SecurityToken: req.ExtField(rmqauth.FieldSecurityToken),
	}
	if fields {
		req.LoadExtFields()
		cr.Fields = req.ExtFields
	}
	if cr.Signature != "" {
		cr.Algorithm = rmqauth.AlgorithmRemoting
		content = req.AppendExtValues(content, rmqauth.FieldSignature)
		cr.Content = append(content, req.Body...)
	}
	return cr
}

// Release returns credentials Credentials made, with their buffer, for
// reuse: cr must not be used afterwards.
func Release(cr *hook.Credentials) {
	buf := cr.Content
	*cr = hook.Credentials{}
	if cap(buf) <= maxPooledContent {
		cr.Content = buf[:0]
	}
	credentials.Put(cr)
}

// maxPooledContent is the largest content buffer kept for reuse.
const maxPooledContent = 64 << 10

var credentials = sync.Pool{New: func() any { return &hook.Credentials{} }}

// Sign adds the ACL credentials of accessKey to req, as RocketMQ's
// client RPC hook does: the AccessKey extField, then the Signature of
// every extField and the body under secretKey. Sign req last: a field
// or body changed afterwards breaks the signature.
func Sign(req *wire.Command, accessKey, secretKey string) {
	NewSigner(accessKey, secretKey).Sign(req)
}

// Signer signs requests as Sign does, reusing its HMAC and buffer: for
// a client that signs many. A Signer is used by one goroutine at a time.
type Signer struct {
	accessKey string
	mac       *rmqauth.MAC
	buf       []byte
}

// NewSigner returns a Signer for accessKey and secretKey.
func NewSigner(accessKey, secretKey string) *Signer {
	return &Signer{accessKey: accessKey, mac: rmqauth.NewMAC(secretKey)}
}

// Sign signs req. A send request whose header was given with
// wire.Command.SetHeader is signed from the header's fields, without
// building the map of extFields.
func (s *Signer) Sign(req *wire.Command) {
	req.SetExt(rmqauth.FieldAccessKey, s.accessKey)
	s.buf = append(req.AppendExtValues(s.buf[:0], rmqauth.FieldSignature), req.Body...)
	req.SetExt(rmqauth.FieldSignature, base64.StdEncoding.EncodeToString(s.mac.Sum(s.buf)))
}
