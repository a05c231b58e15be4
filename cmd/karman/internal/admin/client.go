package admin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/karmanmq/karman/protocol/remoting/auth"
	"github.com/karmanmq/karman/protocol/remoting/peer"
	"github.com/karmanmq/karman/protocol/remoting/wire"
)

// DefaultTimeout is the default of Options.Timeout.
const DefaultTimeout = 5 * time.Second

// Options configure a Client.
type Options struct {
	// NameServers are the name servers' "host:port" addresses, asked in
	// order until one answers. Required.
	NameServers []string
	// Timeout bounds each request, connecting included. Default
	// DefaultTimeout (5 s).
	Timeout time.Duration
	// AccessKey and SecretKey, when AccessKey is set, sign every request
	// as RocketMQ's ACL client hook does, for servers with
	// authentication on.
	AccessKey, SecretKey string
}

// Client administers a cluster through its name servers and brokers.
type Client struct {
	opts Options

	mu    sync.Mutex
	peers map[string]*peer.Peer // by address
}

// New returns a Client. It connects lazily, on the first request to each
// address.
func New(opts Options) (*Client, error) {
	if len(opts.NameServers) == 0 {
		return nil, invalidf("no name server address")
	}
	for _, a := range opts.NameServers {
		if err := checkAddr(a); err != nil {
			return nil, invalidf("name server %q: %v", a, err)
		}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	return &Client{opts: opts, peers: map[string]*peer.Peer{}}, nil
}

// ParseAddrs splits a list of name server addresses separated by commas
// or semicolons (RocketMQ's NAMESRV_ADDR form) and checks each.
func ParseAddrs(s string) ([]string, error) {
	var out []string
	for _, a := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' }) {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if err := checkAddr(a); err != nil {
			return nil, invalidf("address %q: %v", a, err)
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, invalidf("no address in %q", s)
	}
	return out, nil
}

func checkAddr(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return errors.New("want host:port")
	}
	if host == "" || port == "" {
		return errors.New("want host:port")
	}
	return nil
}

// Close closes every connection.
func (c *Client) Close() error {
	c.mu.Lock()
	peers := c.peers
	c.peers = map[string]*peer.Peer{}
	c.mu.Unlock()
	var errs []error
	for _, p := range peers {
		if err := p.Close(); err != nil && !errors.Is(err, peer.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// target names who a request goes to, for error messages.
type target struct {
	role string // "name server" or "broker"
	name string // broker name; empty for name servers
	addr string
}

func (t target) String() string {
	if t.name == "" {
		return t.role + " " + t.addr
	}
	return fmt.Sprintf("%s %s (%s)", t.role, t.name, t.addr)
}

func nameServer(addr string) target { return target{role: "name server", addr: addr} }

func brokerTarget(b Broker) target { return target{role: "broker", name: b.Name, addr: b.Addr} }

// conn returns the cached connection to addr, dialing it if needed.
func (c *Client) conn(ctx context.Context, t target) (*peer.Peer, error) {
	c.mu.Lock()
	p := c.peers[t.addr]
	c.mu.Unlock()
	if p != nil {
		select {
		case <-p.Done():
			c.drop(t.addr, p)
		default:
			return p, nil
		}
	}
	p, err := peer.Dial(ctx, t.addr, peer.Options{DialTimeout: c.opts.Timeout, RequestTimeout: c.opts.Timeout})
	if err != nil {
		return nil, dialFailed(t, err)
	}
	c.mu.Lock()
	if old := c.peers[t.addr]; old != nil {
		c.mu.Unlock()
		p.Close()
		return old, nil
	}
	c.peers[t.addr] = p
	c.mu.Unlock()
	return p, nil
}

func (c *Client) drop(addr string, p *peer.Peer) {
	c.mu.Lock()
	if c.peers[addr] == p {
		delete(c.peers, addr)
	}
	c.mu.Unlock()
	p.Close()
}

// call sends req to t and returns the response whatever its code.
func (c *Client) call(ctx context.Context, t target, req *wire.Command) (*wire.Command, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	p, err := c.conn(ctx, t)
	if err != nil {
		return nil, err
	}
	if c.opts.AccessKey != "" {
		auth.Sign(req, c.opts.AccessKey, c.opts.SecretKey)
	}
	resp, err := p.Invoke(ctx, req)
	if err != nil {
		if errors.Is(err, peer.ErrConnectionLost) {
			c.drop(t.addr, p)
		}
		if ctx.Err() != nil && !errors.Is(err, peer.ErrTimeout) {
			err = fmt.Errorf("%w: %w", peer.ErrTimeout, err)
		}
		return nil, requestFailed(t, req.RequestCode(), err)
	}
	return resp, nil
}

// invoke sends req to t and fails unless the response is SUCCESS.
func (c *Client) invoke(ctx context.Context, t target, req *wire.Command) (*wire.Command, error) {
	resp, err := c.call(ctx, t, req)
	if err != nil {
		return nil, err
	}
	if resp.ResponseCode() != wire.Success {
		return resp, &ResponseError{Target: t.String(), Request: req.RequestCode(), Code: resp.ResponseCode(), Remark: resp.Remark}
	}
	return resp, nil
}

// request builds a request with an optional header and body.
func request(code wire.RequestCode, h wire.Header, body []byte) *wire.Command {
	req := wire.NewRequest(code, nil)
	if h != nil {
		req.EncodeHeader(h)
	}
	req.Body = body
	return req
}

// namesrvInvoke sends a request to the first name server that answers
// and returns its response and who answered. Name servers that cannot be
// reached are skipped; an answer that is not SUCCESS is returned as a
// *ResponseError without asking the others.
func (c *Client) namesrvInvoke(ctx context.Context, code wire.RequestCode, h wire.Header) (*wire.Command, target, error) {
	var errs []error
	for _, addr := range c.opts.NameServers {
		t := nameServer(addr)
		resp, err := c.invoke(ctx, t, request(code, h, nil))
		if err == nil || !errors.Is(err, ErrUnreachable) {
			return resp, t, err
		}
		errs = append(errs, err)
	}
	if len(errs) == 1 {
		return nil, target{}, errs[0]
	}
	joined := errors.Join(errs...)
	return nil, target{}, &transportError{msg: "cannot reach any name server: " + strings.ReplaceAll(joined.Error(), "\n", "; "), cause: joined}
}

// decodeBody decodes a JSON response body into v, normalising fastjson's
// non-string map keys first.
func decodeBody(t target, code wire.RequestCode, body []byte, v any) error {
	norm, err := normalizeKeys(body)
	if err == nil {
		err = wire.DecodeJSONBody(norm, v)
	}
	if err != nil {
		return badBody(t, code, err)
	}
	return nil
}

// badBody describes a response body that does not decode.
func badBody(t target, code wire.RequestCode, err error) error {
	return fmt.Errorf("%s answered %s with a body that does not decode: %w", t, code, err)
}
