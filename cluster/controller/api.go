package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// The request API, served by every controller node on its own address
// (HTTP/1.1, JSON bodies):
//
//	POST /v1/register        RegisterRequest          -> Group
//	POST /v1/heartbeat       HeartbeatRequest         -> Group
//	POST /v1/sync-state-set  AlterSyncStateSetRequest -> Group
//	POST /v1/elect           ElectRequest             -> Group
//	POST /v1/watch           WatchRequest             -> {} when the leader ends it
//	GET  /v1/groups                                   -> []Group (this node's copy)
//	GET  /v1/status                                   -> Status
//
// Only the raft leader answers the POSTs; the others answer 421 with code
// "not-leader" and the leader's id, and a client tries the next address.
// A refusal is {"error": "...", "code": "..."} with the code of one of
// the package's sentinel errors.

var codes = []struct {
	err    error
	code   string
	status int
}{
	{ErrNotLeader, "not-leader", http.StatusMisdirectedRequest},
	{ErrBadRequest, "bad-request", http.StatusBadRequest},
	{ErrMismatch, "mismatch", http.StatusConflict},
	{ErrFenced, "fenced", http.StatusConflict},
	{ErrUnknownGroup, "unknown-group", http.StatusNotFound},
	{ErrUnknownBroker, "unknown-broker", http.StatusNotFound},
	{ErrNoCandidate, "no-candidate", http.StatusServiceUnavailable},
	{ErrPeers, "peers", http.StatusConflict},
}

type apiError struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// Status is a node's view of the quorum.
type Status struct {
	ID     string `json:"id"`
	Leader string `json:"leader"`
	Groups int    `json:"groups"`
	// PeersMismatch says how this node's peer list differs from the
	// one its quorum's leader was started with; empty when they agree.
	PeersMismatch string `json:"peersMismatch,omitempty"`
}

const maxBody = 1 << 20

// Handler returns the request API.
func (c *Controller) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/register", post(c.Register))
	mux.HandleFunc("POST /v1/heartbeat", post(c.Heartbeat))
	mux.HandleFunc("POST /v1/sync-state-set", post(c.AlterSyncStateSet))
	mux.HandleFunc("POST /v1/elect", post(c.Elect))
	mux.HandleFunc("POST /v1/watch", func(w http.ResponseWriter, r *http.Request) {
		var req WatchRequest
		body := http.MaxBytesReader(w, r.Body, maxBody)
		dec := json.NewDecoder(body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			fail(w, fmt.Errorf("%w: %w", ErrBadRequest, err))
			return
		}
		// Read the body to its end, so that the server notices when the
		// connection closes and cancels the request's context.
		io.Copy(io.Discard, body)
		err := c.Watch(r.Context(), req)
		switch {
		case r.Context().Err() != nil:
			// The broker is gone: nobody to answer.
		case err != nil:
			fail(w, err)
		default:
			reply(w, http.StatusOK, Group{})
		}
	})
	mux.HandleFunc("GET /v1/groups", func(w http.ResponseWriter, _ *http.Request) {
		gs := c.Groups()
		if gs == nil {
			gs = []Group{}
		}
		reply(w, http.StatusOK, gs)
	})
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, _ *http.Request) {
		st := Status{ID: c.opts.ID, Leader: c.Leader(), Groups: len(c.Groups())}
		if p := c.peersWrong.Load(); p != nil {
			st.PeersMismatch = *p
		}
		reply(w, http.StatusOK, st)
	})
	return mux
}

func post[Req any](fn func(Req) (Group, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req Req
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			fail(w, fmt.Errorf("%w: %w", ErrBadRequest, err))
			return
		}
		g, err := fn(req)
		if err != nil {
			fail(w, err)
			return
		}
		reply(w, http.StatusOK, g)
	}
}

func fail(w http.ResponseWriter, err error) {
	for _, c := range codes {
		if errors.Is(err, c.err) {
			reply(w, c.status, apiError{Error: err.Error(), Code: c.code})
			return
		}
	}
	reply(w, http.StatusInternalServerError, apiError{Error: err.Error(), Code: "internal"})
}

func reply(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// Client calls the request API of a controller quorum. It remembers which
// address answered last and, on a node that is not the leader or does
// not answer, tries the next.
type Client struct {
	addrs []string
	http  *http.Client
	watch *http.Client // without a timeout: a watch lasts

	mu   sync.Mutex
	next int
}

// NewClient returns a client of the controllers at addrs (host:port).
func NewClient(addrs []string) *Client {
	return &Client{addrs: addrs, http: &http.Client{Timeout: 3 * time.Second}, watch: &http.Client{}}
}

// Register registers a broker; see Controller.Register.
func (c *Client) Register(ctx context.Context, r RegisterRequest) (Group, error) {
	return c.call(ctx, "/v1/register", r)
}

// Heartbeat sends a broker's heartbeat; see Controller.Heartbeat.
func (c *Client) Heartbeat(ctx context.Context, r HeartbeatRequest) (Group, error) {
	return c.call(ctx, "/v1/heartbeat", r)
}

// AlterSyncStateSet reports a master's in-sync set; see
// Controller.AlterSyncStateSet.
func (c *Client) AlterSyncStateSet(ctx context.Context, r AlterSyncStateSetRequest) (Group, error) {
	return c.call(ctx, "/v1/sync-state-set", r)
}

// Elect asks for an election; see Controller.Elect.
func (c *Client) Elect(ctx context.Context, r ElectRequest) (Group, error) {
	return c.call(ctx, "/v1/elect", r)
}

// Watch holds a watch connection to the leader until the leader ends it
// (nil: open another), ctx ends, or it fails; see Controller.Watch. When
// the broker's process dies, the connection closes and the leader counts
// the broker as dead at once.
func (c *Client) Watch(ctx context.Context, r WatchRequest) error {
	_, err := c.callWith(ctx, c.watch, "/v1/watch", r)
	return err
}

func (c *Client) call(ctx context.Context, path string, req any) (Group, error) {
	return c.callWith(ctx, c.http, path, req)
}

func (c *Client) callWith(ctx context.Context, hc *http.Client, path string, req any) (Group, error) {
	if len(c.addrs) == 0 {
		return Group{}, fmt.Errorf("controller: client without addresses")
	}
	body, err := json.Marshal(req)
	if err != nil {
		return Group{}, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	c.mu.Lock()
	start := c.next
	c.mu.Unlock()
	var last error
	for i := range c.addrs {
		n := (start + i) % len(c.addrs)
		g, err := c.callOne(ctx, hc, c.addrs[n], path, body)
		if err == nil || !retryElsewhere(err) {
			if err == nil {
				c.mu.Lock()
				c.next = n
				c.mu.Unlock()
			}
			return g, err
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	return Group{}, last
}

// transportError is a failure to reach a node at all.
type transportError struct{ error }

func (e transportError) Unwrap() error { return e.error }

func retryElsewhere(err error) bool {
	var te transportError
	return errors.Is(err, ErrNotLeader) || errors.As(err, &te)
}

func (c *Client) callOne(ctx context.Context, hc *http.Client, addr, path string, body []byte) (Group, error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return Group{}, fmt.Errorf("controller: %s: %w", addr, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(hr)
	if err != nil {
		return Group{}, transportError{fmt.Errorf("controller: %s: %w", addr, err)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return Group{}, transportError{fmt.Errorf("controller: %s: %w", addr, err)}
	}
	if resp.StatusCode != http.StatusOK {
		var ae apiError
		if json.Unmarshal(b, &ae) != nil || ae.Code == "" {
			return Group{}, transportError{fmt.Errorf("controller: %s: %s: %s", addr, resp.Status, strings.TrimSpace(string(b)))}
		}
		for _, c := range codes {
			if c.code == ae.Code {
				return Group{}, fmt.Errorf("%w (from %s): %s", c.err, addr, ae.Error)
			}
		}
		return Group{}, fmt.Errorf("controller: %s: %s", addr, ae.Error)
	}
	var g Group
	if err := json.Unmarshal(b, &g); err != nil {
		return Group{}, fmt.Errorf("controller: %s: reply: %w", addr, err)
	}
	return g, nil
}
