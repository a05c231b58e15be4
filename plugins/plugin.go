package plugins

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/karmanmq/karman/plugins/internal/pluginpb"
	"github.com/karmanmq/karman/plugins/shared"
)

// Options configure how plugins are run. A zero Options works.
type Options struct {
	// Logger receives the host's log records (starts, failures,
	// restarts) and the plugin's own. Default discards them.
	Logger *slog.Logger
	// CallTimeout is the deadline of each call. Default 2s.
	CallTimeout time.Duration
	// StartTimeout bounds a start: process, handshake and Configure.
	// Default 10s.
	StartTimeout time.Duration
	// Policy is what a failed interceptor call does to its batch.
	// Default PolicyReject.
	Policy Policy
	// FailuresBeforeRestart is how many calls in a row may fail (time
	// out, mostly) before the process is killed and started again; a
	// process that exited is restarted at once. Default 3.
	FailuresBeforeRestart int
	// RestartMin and RestartMax bound the backoff before a restart (and
	// between a connector's retries): it starts at RestartMin, doubles
	// with each attempt that fails and is capped at RestartMax. Defaults
	// 100ms and 30s.
	RestartMin, RestartMax time.Duration
	// SinkBatch is the most messages a sink gets in one Write. Default
	// 256.
	SinkBatch int
	// SourceWait is how long a source's Read may wait for messages.
	// Default 1s.
	SourceWait time.Duration
}

func (o *Options) ensureDefaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 2 * time.Second
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 10 * time.Second
	}
	if o.Policy == PolicyDefault {
		o.Policy = PolicyReject
	}
	if o.FailuresBeforeRestart <= 0 {
		o.FailuresBeforeRestart = 3
	}
	if o.RestartMin <= 0 {
		o.RestartMin = 100 * time.Millisecond
	}
	if o.RestartMax < o.RestartMin {
		o.RestartMax = max(30*time.Second, o.RestartMin)
	}
	if o.SinkBatch <= 0 {
		o.SinkBatch = 256
	}
	if o.SourceWait <= 0 {
		o.SourceWait = time.Second
	}
}

// Plugin is a loaded plugin: its process (restarted when it fails), the
// hooks and connectors it serves.
type Plugin struct {
	spec Spec
	opts Options
	log  *slog.Logger
	sum  []byte // the program's checksum, pinned or not

	// What the plugin said at its first Configure.
	kinds  map[pluginpb.Kind]bool
	bodies bool
	topics []string

	hooks      []any
	connectors []*Connector

	mu         sync.Mutex
	client     *goplugin.Client
	rpc        pluginpb.PluginClient // nil while the process is down
	restarting bool
	closed     bool
	fails      int           // calls failed in a row
	backoff    time.Duration // wait before the next restart
	done       chan struct{} // closed by Close
	wg         sync.WaitGroup

	calls, failures, timeouts, rejects, restarts atomic.Uint64
}

// Load starts the plugin of spec and configures it. The context bounds
// the start (with Options.StartTimeout).
func Load(ctx context.Context, spec Spec, opts Options) (*Plugin, error) {
	opts.ensureDefaults()
	if spec.Timeout > 0 {
		opts.CallTimeout = spec.Timeout
	}
	if spec.Policy != PolicyDefault {
		opts.Policy = spec.Policy
	}
	if err := checkName(spec.Name); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	p := &Plugin{
		spec:    spec,
		opts:    opts,
		log:     opts.Logger.With("plugin", spec.Name),
		backoff: opts.RestartMin,
		done:    make(chan struct{}),
	}
	if err := p.checkProgram(); err != nil {
		return nil, err
	}
	resp, err := p.start(ctx)
	if err != nil {
		return nil, err
	}
	p.kinds = map[pluginpb.Kind]bool{}
	for _, k := range resp.GetKinds() {
		p.kinds[k] = true
	}
	p.bodies = resp.GetBodies()
	p.topics = resp.GetSinkTopics()
	if p.kinds[pluginpb.Kind_KIND_BEFORE_STORE] {
		p.hooks = append(p.hooks, newStoreHook(p))
	}
	if p.kinds[pluginpb.Kind_KIND_BEFORE_DELIVER] {
		p.hooks = append(p.hooks, &deliverHook{p: p})
	}
	if p.kinds[pluginpb.Kind_KIND_AUTHENTICATOR] {
		p.hooks = append(p.hooks, &authenticator{p: p})
	}
	if p.kinds[pluginpb.Kind_KIND_AUTHORIZER] {
		p.hooks = append(p.hooks, &authorizer{p: p})
	}
	if p.kinds[pluginpb.Kind_KIND_SINK] {
		p.connectors = append(p.connectors, &Connector{p: p, kind: KindSink})
	}
	if p.kinds[pluginpb.Kind_KIND_SOURCE] {
		p.connectors = append(p.connectors, &Connector{p: p, kind: KindSource})
	}
	p.log.Info("plugin started", "path", spec.Path, "hooks", len(p.hooks), "connectors", len(p.connectors))
	return p, nil
}

// Name returns the plugin's name.
func (p *Plugin) Name() string { return p.spec.Name }

// Hooks returns the plugin's hooks, for engine.Options.Hooks: values
// implementing hook.BeforeStore, hook.BeforeDeliver, hook.Authenticator
// or hook.Authorizer, one value per interface the plugin serves.
func (p *Plugin) Hooks() []any { return p.hooks }

// Connectors returns the plugin's connectors (a sink, a source or both),
// to be started with the open engine.
func (p *Plugin) Connectors() []*Connector { return p.connectors }

// Close stops the plugin's connectors and its process. It is safe to
// call more than once.
func (p *Plugin) Close() error {
	for _, c := range p.connectors {
		c.Stop()
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	c := p.client
	p.client, p.rpc = nil, nil
	p.mu.Unlock()
	p.wg.Wait() // a restart in flight
	if c != nil {
		c.Kill()
	}
	p.log.Info("plugin stopped")
	return nil
}

// checkProgram gives a clear error for a program that is not there or
// cannot be run, and computes its checksum.
func (p *Plugin) checkProgram() error {
	fi, err := os.Stat(p.spec.Path)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrNotFound, p.spec.Name, err)
	}
	if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%w: %s: %s is not an executable file", ErrNotFound, p.spec.Name, p.spec.Path)
	}
	f, err := os.Open(p.spec.Path)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrNotFound, p.spec.Name, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrNotFound, p.spec.Name, err)
	}
	sum := h.Sum(nil)
	if p.spec.SHA256 != nil && string(sum) != string(p.spec.SHA256) {
		return fmt.Errorf("%w: %s: %s has sha256 %x, the spec pins %x", ErrChecksum, p.spec.Name, p.spec.Path, sum, p.spec.SHA256)
	}
	p.sum = sum
	return nil
}

// start starts the process, dispenses the plugin and configures it. The
// checksum is checked again by go-plugin right before the program runs
// (SecureConfig), so a binary replaced since Load is refused on restart.
func (p *Plugin) start(ctx context.Context) (*pluginpb.ConfigureResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, p.opts.StartTimeout)
	defer cancel()
	cfg := &goplugin.ClientConfig{
		HandshakeConfig:  shared.Handshake,
		VersionedPlugins: map[int]goplugin.PluginSet{shared.ProtocolVersion: shared.PluginMap(nil)},
		Cmd:              exec.Command(p.spec.Path),
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		AutoMTLS:         true,
		StartTimeout:     p.opts.StartTimeout,
		Logger:           newHCLogger(p.log),
		SecureConfig:     &goplugin.SecureConfig{Checksum: p.sum, Hash: sha256.New()},
	}
	client := goplugin.NewClient(cfg)
	fail := func(sentinel error, err error) (*pluginpb.ConfigureResponse, error) {
		client.Kill()
		return nil, fmt.Errorf("%w: %s: %w", sentinel, p.spec.Name, err)
	}
	proto, err := client.Client()
	if err != nil {
		return fail(classifyStart(err), err)
	}
	raw, err := proto.Dispense(shared.PluginName)
	if err != nil {
		return fail(ErrHandshake, err)
	}
	rpc, ok := raw.(pluginpb.PluginClient)
	if !ok {
		return fail(ErrHandshake, fmt.Errorf("dispensed %T", raw))
	}
	resp, err := rpc.Configure(ctx, &pluginpb.ConfigureRequest{Name: p.spec.Name, Config: p.spec.Config})
	if err != nil {
		return fail(ErrStart, fmt.Errorf("configure: %w", err))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		client.Kill()
		return nil, fmt.Errorf("%w: %s", ErrClosed, p.spec.Name)
	}
	p.client, p.rpc = client, rpc
	return resp, nil
}

func classifyStart(err error) error {
	if errors.Is(err, goplugin.ErrChecksumsDoNotMatch) {
		return ErrChecksum
	}
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"unrecognized remote plugin message", "incompatible api version", "unsupported plugin protocol", "exited before we could connect"} {
		if strings.Contains(msg, s) {
			return ErrHandshake
		}
	}
	return ErrStart
}

// call makes one call of the plugin with the call deadline, counting and
// logging a failure and restarting the process when it is due.
func (p *Plugin) call(ctx context.Context, timeout time.Duration, f func(context.Context, pluginpb.PluginClient) error) error {
	p.mu.Lock()
	rpc, closed := p.rpc, p.closed
	p.mu.Unlock()
	p.calls.Add(1)
	if rpc == nil {
		p.failures.Add(1)
		if closed {
			return fmt.Errorf("%w: %w: %s", ErrCallFailed, ErrClosed, p.spec.Name)
		}
		return fmt.Errorf("%w: %w: %s is restarting", ErrCallFailed, ErrUnavailable, p.spec.Name)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	err := f(cctx, rpc)
	cancel()
	if err == nil {
		p.mu.Lock()
		p.fails = 0
		p.backoff = p.opts.RestartMin
		p.mu.Unlock()
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err() // the caller gave up: not the plugin's failure
	}
	p.failures.Add(1)
	if status.Code(err) == codes.DeadlineExceeded {
		p.timeouts.Add(1)
	}
	p.mu.Lock()
	p.fails++
	exited := p.client != nil && p.client.Exited()
	due := exited || p.fails >= p.opts.FailuresBeforeRestart
	p.mu.Unlock()
	p.log.Warn("plugin call failed", "err", err, "exited", exited)
	if due {
		p.restart()
	}
	return fmt.Errorf("%w: %s: %w", ErrCallFailed, p.spec.Name, err)
}

// restart kills the process and starts it again in the background, after
// the backoff; attempts that fail double the backoff up to RestartMax.
func (p *Plugin) restart() {
	p.mu.Lock()
	if p.restarting || p.closed {
		p.mu.Unlock()
		return
	}
	p.restarting = true
	old := p.client
	p.client, p.rpc = nil, nil
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		if old != nil {
			old.Kill()
		}
		for {
			p.mu.Lock()
			wait := p.backoff
			p.backoff = min(2*p.backoff, p.opts.RestartMax)
			p.mu.Unlock()
			p.log.Warn("plugin restarting", "after", wait)
			t := time.NewTimer(wait)
			select {
			case <-p.done:
				t.Stop()
				p.setRestarting(false)
				return
			case <-t.C:
			}
			p.restarts.Add(1)
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				select {
				case <-p.done:
				case <-ctx.Done():
				}
				cancel()
			}()
			_, err := p.start(ctx)
			cancel()
			if err == nil {
				p.mu.Lock()
				p.restarting, p.fails = false, 0
				p.mu.Unlock()
				p.log.Info("plugin restarted")
				return
			}
			p.log.Error("plugin restart failed", "err", err)
			if errors.Is(err, ErrClosed) {
				p.setRestarting(false)
				return
			}
		}
	}()
}

func (p *Plugin) setRestarting(v bool) {
	p.mu.Lock()
	p.restarting = v
	p.mu.Unlock()
}

// up reports whether the process is running and answering.
func (p *Plugin) up() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rpc != nil
}

// pid returns the process id of the plugin's process, 0 while down.
func (p *Plugin) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client == nil {
		return 0
	}
	if rc := p.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// Stats are a plugin's counters since Load.
type Stats struct {
	Name     string
	Calls    uint64 // calls made (hooks, connector calls)
	Failures uint64 // calls that failed, timeouts included
	Timeouts uint64 // calls that outlived their deadline
	Rejects  uint64 // batches the plugin rejected
	Restarts uint64 // restarts of the process attempted
	Up       bool   // whether the process is running now
}

// Stats returns the plugin's counters.
func (p *Plugin) Stats() Stats {
	return Stats{
		Name:     p.spec.Name,
		Calls:    p.calls.Load(),
		Failures: p.failures.Load(),
		Timeouts: p.timeouts.Load(),
		Rejects:  p.rejects.Load(),
		Restarts: p.restarts.Load(),
		Up:       p.up(),
	}
}

// newHCLogger returns an hclog.Logger writing to l: go-plugin's records
// and the plugin's stderr lines, at debug level.
func newHCLogger(l *slog.Logger) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:   "go-plugin",
		Level:  hclog.Info,
		Output: slogWriter{l},
	})
}

type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(b []byte) (int, error) {
	w.l.Debug(strings.TrimSpace(string(b)))
	return len(b), nil
}
