package rmqauth

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strings"

	"github.com/karmanmq/karman/engine/hook"
)

// Names of the extFields and algorithms of RocketMQ's signature schemes.
const (
	FieldAccessKey     = "AccessKey"
	FieldSignature     = "Signature"
	FieldSecurityToken = "SecurityToken"

	// AlgorithmRemoting is hook.Credentials.Algorithm of a signed
	// remoting request.
	AlgorithmRemoting = "HmacSHA1"
	// AlgorithmGRPC is the scheme of a gRPC authorization header.
	AlgorithmGRPC = "MQv2-HMAC-SHA1"
	// HeaderDateTime is the gRPC header whose value is signed.
	HeaderDateTime = "x-mq-date-time"
)

// Errors of this package. Verify's errors match hook.ErrUnauthenticated
// too.
var (
	ErrMalformed    = errors.New("rmqauth: malformed authorization")
	ErrBadSignature = errors.New("rmqauth: signature mismatch")
	ErrNoSignature  = errors.New("rmqauth: request not signed")
	ErrUnknownKey   = errors.New("rmqauth: unknown access key")
)

// RemotingContent returns what a remoting request with extFields ext and
// body is signed over: the values of ext but Signature, ordered by key,
// then body.
func RemotingContent(ext map[string]string, body []byte) []byte {
	return AppendRemotingContent(nil, ext, body)
}

// AppendRemotingContent appends RemotingContent(ext, body) to dst, so
// that a caller can reuse its buffer.
func AppendRemotingContent(dst []byte, ext map[string]string, body []byte) []byte {
	var arr [32]string // requests have fewer fields: no allocation
	keys := arr[:0]
	n := len(body)
	for k, v := range ext {
		if k == FieldSignature {
			continue
		}
		keys = append(keys, k)
		n += len(v)
	}
	slices.Sort(keys)
	dst = slices.Grow(dst, n)
	for _, k := range keys {
		dst = append(dst, ext[k]...)
	}
	return append(dst, body...)
}

// SignRemoting returns the Signature extField of a remoting request with
// the given content (RemotingContent): base64 of its HMAC-SHA1.
func SignRemoting(content []byte, secret string) string {
	return base64.StdEncoding.EncodeToString(mac(content, secret))
}

// SignGRPC returns the Signature of a gRPC authorization header for the
// x-mq-date-time value dateTime: upper-case hexadecimal of its
// HMAC-SHA1.
func SignGRPC(dateTime, secret string) string {
	return strings.ToUpper(hex.EncodeToString(mac([]byte(dateTime), secret)))
}

func mac(content []byte, secret string) []byte { return NewMAC(secret).Sum(content) }

// Verify checks that c's signature is the HMAC-SHA1 of c.Content under
// secret, in the encoding of c.Algorithm. Its errors match
// hook.ErrUnauthenticated.
func Verify(c *hook.Credentials, secret string) error {
	return VerifyMAC(c, NewMAC(secret))
}

// MAC is the HMAC-SHA1 of one secret, with room for its result: for
// VerifyMAC and for signing many requests. An Authenticator may keep one
// per secret (one per goroutine at a time, a sync.Pool say) to spare its
// set-up on every request.
type MAC struct {
	h   hash.Hash
	sum [sha1.Size]byte
}

// NewMAC returns the MAC of secret.
func NewMAC(secret string) *MAC { return &MAC{h: hmac.New(sha1.New, []byte(secret))} }

// Sum returns the HMAC-SHA1 of content. The result is m's: it is valid
// until m's next use.
func (m *MAC) Sum(content []byte) []byte {
	m.h.Reset()
	m.h.Write(content)
	return m.h.Sum(m.sum[:0])
}

// VerifyMAC is Verify with the MAC of the secret. It allocates nothing
// unless it refuses.
func VerifyMAC(c *hook.Credentials, m *MAC) error {
	if c.Signature == "" {
		return unauthenticated(ErrNoSignature, "")
	}
	var gotBuf [64]byte
	var got []byte
	switch c.Algorithm {
	case AlgorithmRemoting:
		if base64.StdEncoding.DecodedLen(len(c.Signature)) > len(gotBuf) {
			return unauthenticated(ErrMalformed, "signature too long")
		}
		n, err := base64.StdEncoding.Decode(gotBuf[:], []byte(c.Signature))
		if err != nil {
			return unauthenticated(ErrMalformed, "signature: "+err.Error())
		}
		got = gotBuf[:n]
	case AlgorithmGRPC:
		if hex.DecodedLen(len(c.Signature)) > len(gotBuf) {
			return unauthenticated(ErrMalformed, "signature too long")
		}
		n, err := hex.Decode(gotBuf[:], []byte(c.Signature))
		if err != nil {
			return unauthenticated(ErrMalformed, "signature: "+err.Error())
		}
		got = gotBuf[:n]
	default:
		return unauthenticated(ErrMalformed, fmt.Sprintf("unknown algorithm %q", c.Algorithm))
	}
	if !hmac.Equal(got, m.Sum(c.Content)) {
		return unauthenticated(ErrBadSignature, "access key "+c.AccessKey)
	}
	return nil
}

// authError matches both its package error and hook.ErrUnauthenticated.
type authError struct {
	err    error
	detail string
}

func (e *authError) Error() string {
	if e.detail == "" {
		return e.err.Error()
	}
	return e.err.Error() + ": " + e.detail
}

func (e *authError) Is(target error) bool {
	return target == e.err || target == hook.ErrUnauthenticated
}

func unauthenticated(err error, detail string) error { return &authError{err, detail} }

// Authorization is a decoded gRPC authorization header.
type Authorization struct {
	Algorithm     string   // MQv2-HMAC-SHA1
	AccessKey     string   // Credential, up to its first '/'
	SignedHeaders []string // x-mq-date-time
	Signature     string   // hexadecimal
}

// ParseAuthorization decodes a gRPC authorization header,
//
//	<algorithm> Credential=<ak>, SignedHeaders=<h>[;<h>...], Signature=<hex>
//
// Items are separated by commas, with optional spaces; unknown items are
// ignored. Credential and Signature are required. Its errors match
// ErrMalformed.
func ParseAuthorization(v string) (Authorization, error) {
	var a Authorization
	alg, rest, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || alg == "" {
		return a, fmt.Errorf("%w: no scheme and credentials", ErrMalformed)
	}
	a.Algorithm = alg
	for item := range strings.SplitSeq(rest, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k, val, ok := strings.Cut(item, "=")
		if !ok {
			return Authorization{}, fmt.Errorf("%w: item %q has no value", ErrMalformed, item)
		}
		switch strings.TrimSpace(k) {
		case "Credential":
			ak, _, _ := strings.Cut(strings.TrimSpace(val), "/")
			a.AccessKey = ak
		case "SignedHeaders":
			a.SignedHeaders = strings.Split(strings.TrimSpace(val), ";")
		case "Signature":
			a.Signature = strings.TrimSpace(val)
		}
	}
	if a.AccessKey == "" {
		return Authorization{}, fmt.Errorf("%w: no Credential", ErrMalformed)
	}
	if a.Signature == "" {
		return Authorization{}, fmt.Errorf("%w: no Signature", ErrMalformed)
	}
	return a, nil
}

// Keys is an Authenticator over a fixed map from access key to secret:
// a request is authenticated when it is signed with the secret of its
// access key, and its principal is named by the access key. A request
// without credentials is refused. A Keys must not change while in use.
type Keys map[string]string

var _ hook.Authenticator = Keys(nil)

// Authenticate implements hook.Authenticator.
func (k Keys) Authenticate(_ context.Context, c *hook.Credentials) (hook.Principal, error) {
	if c.AccessKey == "" {
		return hook.Principal{}, unauthenticated(ErrNoSignature, "no access key")
	}
	secret, ok := k[c.AccessKey]
	if !ok {
		return hook.Principal{}, unauthenticated(ErrUnknownKey, c.AccessKey)
	}
	if err := Verify(c, secret); err != nil {
		return hook.Principal{}, err
	}
	return hook.Principal{Name: c.AccessKey}, nil
}
