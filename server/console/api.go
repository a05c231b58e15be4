package console

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/engine/hook"
	"github.com/karmanmq/karman/engine/meta"
)

// Prefix is where the API is served.
const Prefix = "/api/v1/"

//go:embed openapi.yaml
var openAPI []byte

// EngineFunc calls visit with the open engine and reports true, or
// reports false without calling it while no engine is open. The engine
// stays open until visit returns.
type EngineFunc func(visit func(*engine.Engine)) bool

// Options configure the API.
type Options struct {
	// Engine gives the engine to each request. Required.
	Engine EngineFunc
	// Version is the server's version, shown by the overview.
	Version string
	// Cluster and Broker name this node, as its broker registers it.
	Cluster, Broker string
	// Addrs returns the bound address of each listener by module name
	// ("broker", "grpc", "http", ...), for the overview. Optional.
	Addrs func() map[string]string
	// Modules are the ids of the server's modules, in start order.
	Modules []string
	// Started is when the server started, for the overview's uptime.
	Started time.Time
	// Logger receives a record per failed request that is not the
	// client's fault. Default discards.
	Logger *slog.Logger
	// Compiled are the modules compiled into the server, with where they
	// come from, for the overview. Optional.
	Compiled []Module
	// Status returns the state modules report, by module id (the
	// plugins' counters, replication), for the overview. Optional.
	Status func() map[string]any
	// Role returns the node's replication role, "" while it does not
	// replicate (the overview says "master" then). Optional.
	Role func() string
	// LagHistory, when set, gives each group's lag over the last minutes
	// to GET /groups/{group}. Its owner runs it.
	LagHistory *LagHistory
	// Routes are operations the server's modules add (the MQTT sessions,
	// for one), served as the API's own: authorized, with its errors.
	Routes []Route
	// NameServers returns the name servers this node's broker registers
	// with ("host:port"), for GET /cluster; none shows this broker alone.
	// Optional.
	NameServers func() []string
}

// Route is an operation a module adds to the API.
type Route struct {
	// Pattern is an http.ServeMux pattern under Prefix, with its method:
	// "GET /api/v1/mqtt/sessions".
	Pattern string
	// Action on Resource is what the Authorizers judge; a nil Resource
	// is the node's cluster. Action 0: the caller is authenticated only,
	// and Handle answers what it may see (Authorize).
	Action   hook.Action
	Resource func(*http.Request) hook.Resource
	// Handle answers the request: a value written as JSON with 200, or
	// an error (an *Error, or one errorOf maps; ErrUnavailable while the
	// module does not serve).
	Handle func(*http.Request) (any, error)
}

// ErrUnavailable is answered 503 UNAVAILABLE: what a Route needs is not
// running (starting or stopping).
var ErrUnavailable = errors.New("not available now (starting or stopping)")

// API serves the JSON API. Make one with New.
type API struct {
	o   Options
	mux *http.ServeMux

	clusterCache clusterCache
}

// route is one operation: what it does to which resource, for the
// Authorizers, and its handler.
type route struct {
	action   hook.Action
	resource func(r *http.Request) hook.Resource
	handle   func(*request) (any, error)
}

// request is what a handler works with.
type request struct {
	*http.Request
	eng *engine.Engine
	api *API
}

// New returns the API.
func New(o Options) *API {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	a := &API{o: o, mux: http.NewServeMux()}
	cluster := func(*http.Request) hook.Resource { return hook.Cluster(o.Cluster) }
	topic := func(r *http.Request) hook.Resource { return hook.Topic(r.PathValue("topic")) }
	group := func(r *http.Request) hook.Resource { return hook.Group(r.PathValue("group")) }
	msgTopic := func(r *http.Request) hook.Resource {
		if t := r.URL.Query().Get("topic"); t != "" {
			return hook.Topic(t)
		}
		return hook.Cluster(o.Cluster)
	}
	routes := map[string]route{
		"GET /api/v1/overview":                                 {hook.ActionGet, cluster, a.overview},
		"GET /api/v1/cluster":                                  {hook.ActionGet, cluster, a.cluster},
		"GET /api/v1/topics":                                   {hook.ActionList, cluster, a.listTopics},
		"POST /api/v1/topics":                                  {hook.ActionCreate, func(r *http.Request) hook.Resource { return hook.Topic("") }, a.createTopic},
		"GET /api/v1/topics/{topic}":                           {hook.ActionGet, topic, a.getTopic},
		"PUT /api/v1/topics/{topic}":                           {hook.ActionUpdate, topic, a.updateTopic},
		"DELETE /api/v1/topics/{topic}":                        {hook.ActionDelete, topic, a.deleteTopic},
		"GET /api/v1/topics/{topic}/queues/{queue}/messages":   {hook.ActionGet, topic, a.browse},
		"GET /api/v1/groups":                                   {hook.ActionList, cluster, a.listGroups},
		"GET /api/v1/groups/{group}":                           {hook.ActionGet, group, a.getGroup},
		"POST /api/v1/groups/{group}/reset-offset":             {hook.ActionUpdate, group, a.resetOffset},
		"GET /api/v1/groups/{group}/dead-letters":              {hook.ActionGet, group, a.deadLetters},
		"POST /api/v1/groups/{group}/dead-letters/{id}/resend": {hook.ActionUpdate, group, a.resend},
		"GET /api/v1/messages/{id}":                            {hook.ActionGet, msgTopic, a.messageByID},
		"GET /api/v1/messages/{id}/history":                    {hook.ActionGet, msgTopic, a.history},
		"GET /api/v1/messages":                                 {hook.ActionGet, msgTopic, a.findMessages},
	}
	for pattern, rt := range routes {
		a.mux.Handle(pattern, a.wrap(rt))
	}
	for _, mr := range o.Routes {
		res := mr.Resource
		if res == nil {
			res = cluster
		}
		a.mux.Handle(mr.Pattern, a.wrap(route{mr.Action, res, func(r *request) (any, error) { return mr.Handle(r.Request) }}))
	}
	a.mux.HandleFunc("GET /api/v1/openapi.yaml", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		w.Write(openAPI)
	})
	a.mux.HandleFunc(Prefix, a.notFound)
	return a
}

// ServeHTTP implements http.Handler.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// notFound answers requests no route takes: 405 when the path has a
// route for another method, else 404.
func (a *API) notFound(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := a.mux.Handler(probe); pattern != Prefix && pattern != "" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, &Error{Status: http.StatusMethodNotAllowed, Code: "METHOD_NOT_ALLOWED",
			Message: fmt.Sprintf("%s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, strings.Join(allow, ", "))})
		return
	}
	writeError(w, &Error{Status: http.StatusNotFound, Code: "NOT_FOUND", Message: "no API at " + r.URL.Path + " (see " + Prefix + "openapi.yaml)"})
}

// wrap authenticates and authorizes a request when the engine has
// Authenticators or Authorizers, runs the route with the engine, and
// writes its result or error.
func (a *API) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var (
			v   any
			err error
		)
		ok := a.o.Engine(func(e *engine.Engine) {
			ctx := r.Context()
			if set := e.Hooks(); set.Guarded() {
				var p hook.Principal
				if p, err = set.Authenticate(ctx, credentials(r)); err != nil {
					return
				}
				if rt.action != 0 {
					if err = set.Authorize(ctx, p, rt.action, rt.resource(r)); err != nil {
						return
					}
				}
				ctx = hook.NewContext(ctx, &hook.Client{Protocol: Protocol, Addr: remoteAddr(r), Principal: p})
				ctx = context.WithValue(ctx, guardKey{}, &guard{set, a.o.Cluster})
			}
			v, err = rt.handle(&request{Request: r.WithContext(ctx), eng: e, api: a})
		})
		if !ok {
			err = &Error{Status: http.StatusServiceUnavailable, Code: "UNAVAILABLE", Message: "the engine is not open (starting or stopping)"}
		}
		if err != nil {
			e := errorOf(err)
			if e.Status >= 500 {
				a.o.Logger.Warn("api request failed", "method", r.Method, "path", r.URL.Path, "err", err)
			}
			if e.Status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Basic realm="karman"`)
			}
			writeError(w, e)
			return
		}
		status := http.StatusOK
		if c, ok := v.(created); ok {
			status, v = http.StatusCreated, c.v
		}
		writeJSON(w, status, v)
	})
}

// may reports whether the caller may read r: always without
// Authenticators and Authorizers, else as the Authorizers decide for the
// request's principal (ActionGet). Lists show only what it allows.
func (r *request) may(res hook.Resource) bool {
	set := r.eng.Hooks()
	if !set.Guarded() {
		return true
	}
	var p hook.Principal
	if c, ok := hook.FromContext(r.Context()); ok {
		p = c.Principal
	}
	return set.Authorize(r.Context(), p, hook.ActionGet, res) == nil
}

// guardKey keys the guard of a request the engine's hooks authenticated.
type guardKey struct{}

// guard is what a Route's Handle authorizes with.
type guard struct {
	set     *hook.Set
	cluster string
}

// Cluster returns the resource of the node's cluster, as the API's own
// operations name it, for r, a request a Route's Handle serves.
func Cluster(r *http.Request) hook.Resource {
	if g, ok := r.Context().Value(guardKey{}).(*guard); ok {
		return hook.Cluster(g.cluster)
	}
	return hook.Cluster("")
}

// Authorize reports whether the caller of r, a request a Route's Handle
// serves, may do a on res: nil when the server authenticates nobody,
// else what the Authorizers decide for its principal.
func Authorize(r *http.Request, a hook.Action, res hook.Resource) error {
	g, ok := r.Context().Value(guardKey{}).(*guard)
	if !ok {
		return nil
	}
	p, _ := Principal(r)
	return g.set.Authorize(r.Context(), p, a, res)
}

// Principal returns who made r, a request a Route's Handle serves, as the
// Authenticators established it; false when the server authenticates
// nobody.
func Principal(r *http.Request) (hook.Principal, bool) {
	if _, ok := r.Context().Value(guardKey{}).(*guard); !ok {
		return hook.Principal{}, false
	}
	c, ok := hook.FromContext(r.Context())
	if !ok {
		return hook.Principal{}, false
	}
	return c.Principal, true
}

// Protocol is the hook.Credentials.Protocol of API requests.
const Protocol = "http"

// credentials are what an API request carries: HTTP Basic credentials
// as Username and Password, and the Authorization header in Fields.
func credentials(r *http.Request) *hook.Credentials {
	c := &hook.Credentials{Protocol: Protocol, Addr: remoteAddr(r), Fields: map[string]string{}}
	if h := r.Header.Get("Authorization"); h != "" {
		c.Fields["authorization"] = h
	}
	if u, p, ok := r.BasicAuth(); ok {
		c.Username, c.Password, c.AccessKey = u, []byte(p), u
	}
	return c
}

func remoteAddr(r *http.Request) netip.AddrPort {
	ap, _ := netip.ParseAddrPort(r.RemoteAddr)
	return ap
}

// created marks a result answered with 201.
type created struct{ v any }

// Error is the API's error: its HTTP status, a stable code and a message
// for people. It is written as {"error":{"code":...,"message":...}}.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return e.Message }

// badRequest is a 400 INVALID_ARGUMENT.
func badRequest(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: "INVALID_ARGUMENT", Message: fmt.Sprintf(format, args...)}
}

// errorOf maps an error to the API's: the one table from engine and hook
// errors to HTTP statuses.
func errorOf(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	msg := strings.TrimPrefix(err.Error(), "engine: ")
	var re *engine.OffsetRangeError
	switch {
	case errors.Is(err, hook.ErrUnauthenticated):
		return &Error{http.StatusUnauthorized, "UNAUTHENTICATED", msg}
	case errors.Is(err, hook.ErrDenied):
		return &Error{http.StatusForbidden, "FORBIDDEN", msg}
	case errors.Is(err, engine.ErrTopicNotFound):
		return &Error{http.StatusNotFound, "TOPIC_NOT_FOUND", msg}
	case errors.Is(err, engine.ErrGroupNotFound):
		return &Error{http.StatusNotFound, "GROUP_NOT_FOUND", msg}
	case errors.Is(err, engine.ErrMessageNotFound):
		return &Error{http.StatusNotFound, "MESSAGE_NOT_FOUND", msg}
	case errors.Is(err, meta.ErrTopicExists):
		return &Error{http.StatusConflict, "TOPIC_EXISTS", msg}
	case errors.As(err, &re), errors.Is(err, engine.ErrOffsetOutOfRange):
		return &Error{http.StatusBadRequest, "OFFSET_OUT_OF_RANGE", msg}
	case errors.Is(err, engine.ErrInvalidTopic), errors.Is(err, engine.ErrInvalidGroup), errors.Is(err, engine.ErrReservedName),
		errors.Is(err, engine.ErrInvalidQueue), errors.Is(err, engine.ErrInvalidArgument), errors.Is(err, meta.ErrInvalid),
		errors.Is(err, engine.ErrInvalidMessage), errors.Is(err, engine.ErrEmptyBody), errors.Is(err, engine.ErrMessageTooLarge):
		return &Error{http.StatusBadRequest, "INVALID_ARGUMENT", msg}
	case errors.Is(err, engine.ErrNoPermission):
		return &Error{http.StatusForbidden, "NO_PERMISSION", msg}
	case errors.Is(err, engine.ErrDiskFull), errors.Is(err, engine.ErrDiskFailed), errors.Is(err, engine.ErrClosed):
		return &Error{http.StatusServiceUnavailable, "UNAVAILABLE", msg}
	case errors.Is(err, ErrUnavailable), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &Error{http.StatusServiceUnavailable, "UNAVAILABLE", msg}
	}
	return &Error{http.StatusInternalServerError, "INTERNAL", msg}
}

func writeError(w http.ResponseWriter, e *Error) {
	writeJSON(w, e.Status, map[string]*Error{"error": e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// maxBody bounds a request body.
const maxBody = 1 << 20

// decode reads the request's JSON body into v, refusing unknown fields,
// trailing data and bodies over maxBody.
func (r *request) decode(v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return &Error{Status: http.StatusUnsupportedMediaType, Code: "UNSUPPORTED_MEDIA_TYPE", Message: "the body must be application/json, not " + ct}
	}
	dec := json.NewDecoder(io.LimitReader(r.Body, maxBody+1))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return badRequest("the request needs a JSON body")
		}
		return badRequest("the body is not the JSON expected: %v", err)
	}
	if dec.More() {
		return badRequest("the body holds more than one JSON value")
	}
	if dec.InputOffset() > maxBody {
		return badRequest("the body is larger than %d bytes", maxBody)
	}
	return nil
}

// intParam reads query parameter name as an integer within [lo, hi], or
// def when absent.
func (r *request) intParam(name string, def, lo, hi int64) (int64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("parameter %s=%q: want an integer from %d to %d", name, s, lo, hi)
	}
	return n, nil
}

// timeParam reads query parameter name as a time: milliseconds since the
// epoch or RFC 3339. It returns def (ms) when absent.
func (r *request) timeParam(name string, def int64) (int64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	return parseTime(name, s)
}

func parseTime(name, s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return 0, badRequest("%s=%q: a time is not negative", name, s)
		}
		return n, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, badRequest("%s=%q: want milliseconds since the epoch or an RFC 3339 time (2006-01-02T15:04:05Z)", name, s)
	}
	if t.UnixMilli() < 0 {
		return 0, badRequest("%s=%q: a time is not before 1970", name, s)
	}
	return t.UnixMilli(), nil
}
