package protobench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/karmanmq/karman/bench"
	grpcbench "github.com/karmanmq/karman/bench/grpc"
	"github.com/karmanmq/karman/bench/jetstream"
	"github.com/karmanmq/karman/bench/remoting"
	"github.com/karmanmq/karman/bench/rocketmq"
	"github.com/karmanmq/karman/cmd/karman/internal/progress"
	karmancmd "github.com/karmanmq/karman/cmd/karman/karmancmd"
	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/server"
	"github.com/karmanmq/karman/server/config"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// benchModules returns the modules an in-process server of "bench
// produce" and "bench consume" may use: those compiled into the binary.
var benchModules = func() *server.Registry { return server.Default }

// Listeners of the front-ends the in-process server needs.
const (
	benchNamesrv = "namesrv"
	benchBroker  = "broker"
	benchGRPC    = "grpc"
)

// Modules of those front-ends.
const (
	benchNamesrvID server.ModuleID = "frontend.namesrv"
	benchBrokerID  server.ModuleID = "frontend.remoting"
	benchGRPCID    server.ModuleID = "frontend.grpc"
)

// Main runs the command line of karman-bench and exits the process: 0 on
// success, 1 on any error (cobra prints it). The commands call themselves
// by the name the process was started with, so that "karman bench", which
// starts this binary under that name, gets help and errors in its own
// words.
func Main() {
	name := filepath.Base(os.Args[0])
	if err := New(name).ExecuteContext(context.Background()); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// New returns the root command, calling itself name in help and errors;
// its commands are "produce" and "consume".
func New(name string) *cobra.Command {
	root := &cobra.Command{
		Use:   "karman-bench",
		Short: "Measure brokers over the network: Karman side by side with peers",
		Long: `Measure brokers over the network: Karman, in this process or at an
address, side by side with peer brokers (NATS JetStream) in the same run,
and MQTT brokers side by side with mosquitto; and "chaos", faults
injected into a local cluster. "karman bench produce", "karman bench
consume", "karman bench mqtt" and "karman chaos" run this program.`,
		// Errors are printed once by cobra; usage only on request.
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: true},
		Annotations:       map[string]string{cobra.CommandDisplayNameAnnotation: name},
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w\nRun '%s --help' for usage.", err, c.CommandPath())
	})
	root.AddCommand(
		newBenchProtocolCmd(bench.ModeProduce),
		newBenchProtocolCmd(bench.ModeConsume),
		newBenchMQTTCmd(),
		newMQTTIdleWorkerCmd(),
		newChaosCmd(),
	)
	return root
}

// protocolBench holds the flags of one "bench produce|consume" command.
type protocolBench struct {
	mode        bench.Mode
	w           bench.Workload
	size        config.ByteSize
	protocol    string
	addr        string
	client      string
	peer        string
	queues      int32
	connections int
	data        string
	json        bool
	cpuprofile  string
	trace       string
	accessKey   string
	secretKey   string
	authUsers   int
	progress    bool
}

// Defaults of the credentials of --peer auth.
const (
	defaultBenchAccessKey = "karman-bench"
	defaultBenchSecretKey = "karman-bench-secret"
	benchAuthID           = server.AuthID
)

func newBenchProtocolCmd(mode bench.Mode) *cobra.Command {
	b := &protocolBench{mode: mode, size: bench.DefaultSize}
	short := "Measure producing over a protocol, side by side with a peer broker"
	what := `send --count messages of --size bytes from --producers producers. With
--inflight 1 (the default) each producer waits for every acknowledgement
(phase "produce"); with --inflight K it keeps K sends outstanding (phase
"produce_async").`
	if mode == bench.ModeConsume {
		short = "Measure consuming over a protocol, side by side with a peer broker"
		what = `pre-load --count messages of --size bytes (not measured), then pull them
all, --batch per request, from one puller per queue (or --consumers
pullers): phase "consume".`
	}
	cmd := &cobra.Command{
		Use:   string(mode),
		Short: short,
		Long: `Drive a broker over the network and ` + what + `

--protocol remoting speaks RocketMQ remoting: the route comes from the name
server at --addr, and --client chooses the client: "karman" (Karman's own
remoting client sending what the Go client sends, with little overhead of
its own) or "rocketmq" (the Apache RocketMQ Go client). Without --addr an
in-process Karman (engine, name server and broker on loopback ports, data
in --data or a temporary directory, flushing as --flush says) is started.

--protocol grpc speaks RocketMQ 5 gRPC to the endpoint at --addr (or to the
in-process Karman's): one message per SendMessage, and for consuming
ReceiveMessage of --batch messages each acknowledged with one AckMessage.
--client chooses the client: "karman" (a lean HTTP/2 client of the load
generator's own) or "grpc-go".

--peer adds systems measured with the same work in the same run, in this
order: "remoting" (with --protocol grpc: the same in-process Karman driven
over remoting, so the two protocols compare side by side), "auth" (with
--protocol remoting and no --addr: a second in-process Karman with --auth,
driven by a normal user with one policy among --auth-users other users with
one policy each, every request signed; system "karman+auth") and "nats" (an
embedded NATS server with JetStream file storage in a temporary directory,
sync_interval always with --flush sync, through the nats.go JetStream
API). Separate them with commas.

--access-key and --secret-key (or KARMAN_ACCESS_KEY and KARMAN_SECRET_KEY)
sign every remoting request, as RocketMQ's clients with credentials do: for
a server at --addr with --auth on, or, without --addr, to run the
in-process Karman with --auth and that user (one policy allowing it all).

On a terminal (or with --progress), a line on stderr shows the system
being measured and the time elapsed.

The machine and the flags go to stderr. Stdout gets one line per system
and phase: a table, or JSON with --json:

  {"system":"karman","phase":"produce","msgs_per_sec":…,"p50_us":…,"p99_us":…,
   "count":…,"size":…,"producers":…,"inflight":…,"protocol":…,…}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b.w.Size = int(b.size)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return b.run(ctx, cmd)
		},
	}
	f := cmd.Flags()
	f.SortFlags = false // in the order added, which groups related flags
	f.StringVar(&b.protocol, "protocol", "remoting", "protocol to drive the broker with: remoting or grpc")
	f.StringVar(&b.addr, "addr", "", "name server host:port for remoting, endpoint host:port for grpc (default: start Karman in this process)")
	f.StringVar(&b.w.Topic, "topic", bench.DefaultTopic, "topic (and NATS subject)")
	f.Var(&b.size, "size", "message body size (bytes; KiB, MiB suffixes allowed)")
	f.Int64Var(&b.w.Count, "count", bench.DefaultCount, "messages in total")
	f.IntVar(&b.w.Producers, "producers", 1, "producers, each with its own connection (also the pre-load of consume)")
	f.IntVar(&b.w.Inflight, "inflight", 1, "sends outstanding per producer; 1 is a synchronous producer")
	f.IntVar(&b.w.Batch, "batch", bench.DefaultBatch, "messages per pull request")
	f.IntVar(&b.w.Consumers, "consumers", 0, "pullers (default one per queue)")
	f.Int32Var(&b.queues, "queues", remoting.DefaultQueues, "queues of the topic when the bench creates it")
	f.StringVar(&b.client, "client", "karman", "client: karman or rocketmq with --protocol remoting, karman or grpc-go with --protocol grpc")
	f.IntVar(&b.connections, "connections", 0, "connections (per broker) shared by the producers or pullers of both systems (default one each)")
	f.StringVar(&b.peer, "peer", "", "also measure these in the same run, separated by commas: remoting (with --protocol grpc), nats")
	f.StringVar(&b.w.Flush, "flush", "async", "flush policy of the in-process servers: async or sync")
	f.StringVar(&b.data, "data", "", "data directory of the in-process Karman (default a temporary directory, removed afterwards)")
	f.StringVar(&b.accessKey, "access-key", os.Getenv("KARMAN_ACCESS_KEY"), "sign remoting requests as this user (default from KARMAN_ACCESS_KEY); without --addr, run the in-process Karman with --auth")
	f.StringVar(&b.secretKey, "secret-key", "", "the secret of --access-key (default from KARMAN_SECRET_KEY)")
	config.MarkSecret(f, "secret-key")
	f.IntVar(&b.authUsers, "auth-users", 300, "with --peer auth or --access-key and no --addr: other users, one policy each, the in-process ACL holds")
	f.BoolVar(&b.json, "json", false, "print JSON lines instead of a table")
	f.BoolVar(&b.progress, "progress", false, "draw the progress line on stderr even when it is not a terminal")
	f.StringVar(&b.trace, "trace", "", "write an execution trace of the measured part of the Karman phase to this file")
	f.StringVar(&b.cpuprofile, "cpuprofile", "", "write a CPU profile of the measured part of each system's phase to this file (the peer's to this file + \".nats\")")
	return cmd
}

// check validates the flags that bench.Workload does not cover.
func (b *protocolBench) check() error {
	if b.protocol != "remoting" && b.protocol != "grpc" {
		return fmt.Errorf("bench: --protocol %q: want remoting or grpc", b.protocol)
	}
	switch {
	case b.client == "karman":
	case b.protocol == "remoting" && b.client != "rocketmq":
		return fmt.Errorf("bench: --client %q: want karman or rocketmq", b.client)
	case b.protocol == "grpc" && b.client != "grpc-go":
		return fmt.Errorf("bench: --client %q: want karman or grpc-go with --protocol grpc", b.client)
	}
	for _, p := range b.peers() {
		switch {
		case p == "nats":
		case p == "auth" && b.protocol == "remoting":
			if b.addr != "" {
				return errors.New("bench: --peer auth runs an in-process Karman with --auth; leave out --addr")
			}
		case p == "remoting" && b.protocol == "grpc":
			if b.addr != "" {
				return errors.New("bench: --peer remoting drives the in-process Karman; leave out --addr")
			}
		default:
			return fmt.Errorf("bench: --peer %q: want nats, auth (with --protocol remoting), or remoting with --protocol grpc", p)
		}
	}
	if b.w.Flush != "async" && b.w.Flush != "sync" {
		return fmt.Errorf("bench: --flush %q: want async or sync", b.w.Flush)
	}
	if b.queues < 1 {
		return fmt.Errorf("bench: --queues %d: want at least 1", b.queues)
	}
	if b.connections < 0 {
		return fmt.Errorf("bench: --connections %d: want 0 (one each) or more", b.connections)
	}
	if b.secretKey == "" {
		b.secretKey = os.Getenv("KARMAN_SECRET_KEY")
	}
	if b.accessKey != "" && b.secretKey == "" {
		return fmt.Errorf("bench: --access-key %s needs --secret-key (or KARMAN_SECRET_KEY)", b.accessKey)
	}
	if b.accessKey != "" && b.protocol != "remoting" {
		return errors.New("bench: --access-key signs remoting requests; use it with --protocol remoting")
	}
	if b.authUsers < 0 {
		return fmt.Errorf("bench: --auth-users %d: want 0 or more", b.authUsers)
	}
	if b.addr != "" && b.data != "" {
		return errors.New("bench: --data applies to the in-process Karman only; leave out --addr")
	}
	// Every flag has a default, so zero values are the user's: refuse
	// them rather than fill in the defaults.
	return b.w.Validate()
}

func (b *protocolBench) run(ctx context.Context, cmd *cobra.Command) (err error) {
	if err := b.check(); err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	bench.WriteMachine(stderr, flagLine(cmd.Flags()))

	k := &benchKarman{nameServer: b.addr, grpc: b.addr}
	if b.addr == "" {
		var ba *benchAuth
		if b.accessKey != "" {
			ba = &benchAuth{user: b.accessKey, secret: b.secretKey, others: b.authUsers}
		}
		if k, err = startBenchKarman(ctx, b.data, b.w.Flush, b.queues, b.protocol == "grpc", ba, stderr); err != nil {
			return err
		}
		defer func() { err = errors.Join(err, k.stop()) }()
		fmt.Fprintf(stderr, "karman: in process, name server %s, gRPC %s, data %s, flush %s, auth %v\n", k.nameServer, k.grpc, k.data, b.w.Flush, ba != nil)
	}

	var targets []bench.Target
	if b.protocol == "grpc" {
		t, closer, err := b.grpcTarget(k.grpc)
		if err != nil {
			return err
		}
		defer closer.Close()
		targets = append(targets, t)
	}
	if b.protocol == "remoting" || slices.Contains(b.peers(), "remoting") {
		t, closer, err := b.remotingTarget(ctx, k.nameServer)
		if err != nil {
			return err
		}
		defer closer.Close()
		targets = append(targets, t)
	}
	if slices.Contains(b.peers(), "auth") {
		ak, sk := b.accessKey, b.secretKey
		if ak == "" {
			ak, sk = defaultBenchAccessKey, defaultBenchSecretKey
		}
		ka, err := startBenchKarman(ctx, "", b.w.Flush, b.queues, false, &benchAuth{user: ak, secret: sk, others: b.authUsers}, stderr)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, ka.stop()) }()
		fmt.Fprintf(stderr, "karman+auth: in process, name server %s, data %s, flush %s, %d users\n", ka.nameServer, ka.data, b.w.Flush, b.authUsers+2)
		g, err := remoting.New(ctx, remoting.Options{NameServer: ka.nameServer, Connections: b.connections, Queues: b.queues, AccessKey: ak, SecretKey: sk})
		if err != nil {
			return err
		}
		defer g.Close()
		path := b.cpuprofile
		if path != "" {
			path += ".auth"
		}
		targets = append(targets, bench.Target{System: "karman+auth", Client: "karman", Protocol: "remoting", Generator: b.profile(g, path, "")})
	}
	if slices.Contains(b.peers(), "nats") {
		n := &lazyNATS{syncAlways: b.w.Flush == "sync", consumers: int(b.queues), connections: b.connections, stderr: stderr}
		defer func() { err = errors.Join(err, n.Close()) }()
		var gen bench.Generator = n
		if b.cpuprofile != "" {
			gen = &profiled{Generator: n, path: b.cpuprofile + ".nats"}
		}
		targets = append(targets, bench.Target{System: "nats", Client: "nats.go", Protocol: "nats", Generator: gen})
	}
	// One system at a time, so that the progress line says which runs.
	what := "bench " + string(b.mode)
	bar := progress.Spinner(stderr, what, b.progress)
	stopSpin := bar.Spin(200 * time.Millisecond)
	defer bar.Finish()
	defer stopSpin()
	out := bench.NewPrinter(bar.ClearBefore(cmd.OutOrStdout()), b.json)
	for i, t := range targets {
		bar.Describe(fmt.Sprintf("%s: %s (%d of %d), %d messages", what, t.System, i+1, len(targets), b.w.Count))
		if err := bench.Run(ctx, b.mode, b.w, []bench.Target{t}, out); err != nil {
			return err
		}
	}
	return nil
}

// peers returns the --peer list.
func (b *protocolBench) peers() []string {
	if b.peer == "" {
		return nil
	}
	return strings.Split(b.peer, ",")
}

// profile wraps gen as the flags ask: a CPU profile to path, and the
// execution trace when gen drives the protocol --protocol names.
func (b *protocolBench) profile(gen bench.Generator, path, protocol string) bench.Generator {
	if path != "" {
		gen = &profiled{Generator: gen, path: path}
	}
	if b.trace != "" && protocol == b.protocol {
		gen = &traced{Generator: gen, path: b.trace}
	}
	return gen
}

// remotingTarget is Karman driven over remoting through the name server at
// nameServer, with the client --client names (Karman's own when remoting
// is the peer of --protocol grpc).
func (b *protocolBench) remotingTarget(ctx context.Context, nameServer string) (bench.Target, io.Closer, error) {
	var (
		gen    bench.Generator
		closer io.Closer
	)
	client := b.client
	if b.protocol != "remoting" {
		client = "karman"
	}
	switch client {
	case "karman":
		g, err := remoting.New(ctx, remoting.Options{NameServer: nameServer, Connections: b.connections, Queues: b.queues, AccessKey: b.accessKey, SecretKey: b.secretKey})
		if err != nil {
			return bench.Target{}, nil, err
		}
		gen, closer = g, g
	case "rocketmq":
		g, err := rocketmq.New(ctx, rocketmq.Options{NameServer: nameServer, Connections: b.connections, Queues: b.queues, AccessKey: b.accessKey, SecretKey: b.secretKey})
		if err != nil {
			return bench.Target{}, nil, err
		}
		gen, closer = g, g
	}
	path := b.cpuprofile
	if path != "" && b.protocol != "remoting" {
		path += ".remoting"
	}
	return bench.Target{System: "karman", Client: client, Protocol: "remoting", Generator: b.profile(gen, path, "remoting")}, closer, nil
}

// grpcTarget is Karman driven over gRPC at endpoint.
func (b *protocolBench) grpcTarget(endpoint string) (bench.Target, io.Closer, error) {
	g, err := grpcbench.New(grpcbench.Options{Addr: endpoint, Connections: b.connections, Queues: b.queues, Client: b.client})
	if err != nil {
		return bench.Target{}, nil, err
	}
	return bench.Target{System: "karman", Client: b.client, Protocol: "grpc", Generator: b.profile(g, b.cpuprofile, "grpc")}, g, nil
}

// flagLine renders every flag as --name=value.
func flagLine(fs *pflag.FlagSet) string {
	var parts []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" {
			parts = append(parts, "--"+f.Name+"="+config.Shown(f))
		}
	})
	return strings.Join(parts, " ")
}

// benchKarman is a Karman server run in this process by server.Run.
type benchKarman struct {
	nameServer string
	grpc       string // gRPC endpoint, when started
	data       string
	removeData bool
	cancel     context.CancelFunc
	done       chan error
}

// startBenchKarman starts the engine, the name server and the broker,
// wired as "karman serve" wires them, on loopback ports chosen at run time,
// and returns once the server is ready.
func startBenchKarman(ctx context.Context, data, flush string, queues int32, withGRPC bool, ba *benchAuth, stderr io.Writer) (*benchKarman, error) {
	reg := benchModules()
	have := map[server.ModuleID]bool{}
	for _, mi := range reg.Modules() {
		have[mi.ID] = true
	}
	if !have[benchNamesrvID] || !have[benchBrokerID] {
		return nil, errors.New("bench: this karman binary was built without the remoting name server and broker; pass --addr")
	}
	if withGRPC && !have[benchGRPCID] {
		return nil, errors.New("bench: this karman binary was built without the gRPC front-end; pass --addr")
	}
	if ba != nil && !have[benchAuthID] {
		return nil, errors.New("bench: this karman binary was built without the auth.acl module")
	}
	k := &benchKarman{data: data, done: make(chan error, 1)}
	if k.data == "" {
		dir, err := os.MkdirTemp("", "karman-bench-")
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		k.data, k.removeData = dir, true
	}

	opts, err := reg.NewOptions()
	if err != nil {
		k.cleanup()
		return nil, fmt.Errorf("bench: %w", err)
	}
	cfg := opts.Config
	cfg.Data = k.data
	cfg.LogLevel = slog.LevelError
	cfg.DefaultQueues = queues
	mode, err := engine.ParseFlushMode(flush)
	if err != nil {
		k.cleanup()
		return nil, err
	}
	cfg.Flush = mode
	for name := range cfg.Addrs {
		cfg.Addrs[name] = config.Off
	}
	cfg.Addrs[benchNamesrv] = "127.0.0.1:0"
	cfg.Addrs[benchBroker] = "127.0.0.1:0"
	if withGRPC {
		cfg.Addrs[benchGRPC] = "127.0.0.1:0"
	}
	if ba != nil {
		if err := ba.configure(opts.Flags); err != nil {
			k.cleanup()
			return nil, err
		}
	}

	ann := newAnnouncements()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	k.cancel = cancel
	go func() {
		opts.Version = karmancmd.Version()
		opts.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
		opts.Announce = ann
		k.done <- server.Run(sctx, *opts)
	}()
	prefix := "karman: " + benchNamesrv + " listening on "
	grpcPrefix := "karman: " + benchGRPC + " listening on "
	for {
		select {
		case line := <-ann.lines:
			if addr, ok := strings.CutPrefix(line, prefix); ok {
				k.nameServer = dialableAddr(addr)
			}
			if addr, ok := strings.CutPrefix(line, grpcPrefix); ok {
				k.grpc = dialableAddr(addr)
			}
			if line == "karman: ready" {
				if k.nameServer == "" {
					k.stop()
					return nil, errors.New("bench: the in-process server announced no name server")
				}
				if ba != nil {
					if err := ba.users(ctx, k.nameServer); err != nil {
						k.stop()
						return nil, err
					}
				}
				return k, nil
			}
		case err := <-k.done:
			k.done <- err
			k.stop()
			if err == nil {
				err = errors.New("stopped before it was ready")
			}
			return nil, fmt.Errorf("bench: in-process karman: %w", err)
		case <-ctx.Done():
			k.stop()
			return nil, ctx.Err()
		}
	}
}

// stop shuts the server down and removes a temporary data directory.
func (k *benchKarman) stop() error {
	k.cancel()
	err := <-k.done
	k.done <- err // stop may run twice
	return errors.Join(err, k.cleanup())
}

func (k *benchKarman) cleanup() error {
	if k.removeData {
		k.removeData = false
		return os.RemoveAll(k.data)
	}
	return nil
}

// dialableAddr turns a bound address into one a client can dial.
func dialableAddr(a string) string {
	if rest, ok := strings.CutPrefix(a, "[::]:"); ok {
		return "127.0.0.1:" + rest
	}
	if rest, ok := strings.CutPrefix(a, "0.0.0.0:"); ok {
		return "127.0.0.1:" + rest
	}
	return a
}

// announcements collects the lines server.Run announces.
type announcements struct {
	mu    sync.Mutex
	buf   []byte
	lines chan string
}

func newAnnouncements() *announcements { return &announcements{lines: make(chan string, 64)} }

func (a *announcements) Write(p []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.buf = append(a.buf, p...)
	for {
		i := bytes.IndexByte(a.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		select {
		case a.lines <- string(a.buf[:i]):
		default: // nobody listens any more
		}
		a.buf = a.buf[i+1:]
	}
}

// lazyNATS starts the embedded NATS server when its turn comes, so it
// does not run while Karman is measured.
type lazyNATS struct {
	syncAlways  bool
	consumers   int
	connections int
	stderr      io.Writer
	srv         *jetstream.Server
	gen         *jetstream.Generator
}

func (n *lazyNATS) start() (*jetstream.Generator, error) {
	if n.gen != nil {
		return n.gen, nil
	}
	var (
		srv *jetstream.Server
		err error
	)
	// The server starts inside a profiled phase: label its goroutines as
	// the server's.
	pprof.Do(context.Background(), pprof.Labels("side", "server"), func(context.Context) {
		srv, err = jetstream.Start(jetstream.ServerOptions{SyncAlways: n.syncAlways})
	})
	if err != nil {
		return nil, err
	}
	g, err := jetstream.New(jetstream.Options{URL: srv.URL(), Consumers: n.consumers, Connections: n.connections})
	if err != nil {
		srv.Close()
		return nil, err
	}
	interval := "default sync_interval"
	if n.syncAlways {
		interval = "sync_interval always"
	}
	fmt.Fprintf(n.stderr, "nats: in process, %s, JetStream file storage, %s\n", srv.URL(), interval)
	n.srv, n.gen = srv, g
	return g, nil
}

func (n *lazyNATS) Produce(ctx context.Context, w bench.Workload) (bench.Measurement, error) {
	g, err := n.start()
	if err != nil {
		return bench.Measurement{}, err
	}
	return g.Produce(ctx, w)
}

func (n *lazyNATS) Consume(ctx context.Context, w bench.Workload) (bench.Measurement, error) {
	g, err := n.start()
	if err != nil {
		return bench.Measurement{}, err
	}
	return g.Consume(ctx, w)
}

func (n *lazyNATS) Close() error {
	if n.srv == nil {
		return nil
	}
	return n.srv.Close()
}

// profiled writes a CPU profile of the measured part of every phase of
// its Generator (not the pre-load). Samples of the load generator (and the
// client connections it opens) carry the label side=client, so "pprof
// -tagignore side=client" shows the server alone.
type profiled struct {
	bench.Generator
	path string
	file *os.File
	err  error
}

func (p *profiled) Begin() {
	if p.file, p.err = os.Create(p.path); p.err != nil {
		return
	}
	p.err = pprof.StartCPUProfile(p.file)
}

func (p *profiled) End() {
	if p.file == nil {
		return
	}
	if p.err == nil {
		pprof.StopCPUProfile()
	}
	if err := p.file.Close(); p.err == nil {
		p.err = err
	}
	p.file = nil
}

func (p *profiled) measure(ctx context.Context, f func(context.Context) (bench.Measurement, error)) (m bench.Measurement, err error) {
	pprof.Do(bench.WithObserver(ctx, p), pprof.Labels("side", "client"), func(ctx context.Context) { m, err = f(ctx) })
	p.End()
	if err == nil && p.err != nil {
		err = fmt.Errorf("bench: cpu profile: %w", p.err)
	}
	return m, err
}

func (p *profiled) Produce(ctx context.Context, w bench.Workload) (bench.Measurement, error) {
	return p.measure(ctx, func(ctx context.Context) (bench.Measurement, error) { return p.Generator.Produce(ctx, w) })
}

func (p *profiled) Consume(ctx context.Context, w bench.Workload) (bench.Measurement, error) {
	return p.measure(ctx, func(ctx context.Context) (bench.Measurement, error) { return p.Generator.Consume(ctx, w) })
}

// traced writes an execution trace of the measured part of every phase of
// its Generator.
type traced struct {
	bench.Generator
	path string
	file *os.File
	err  error
}

func (t *traced) Begin() {
	if t.file, t.err = os.Create(t.path); t.err != nil {
		return
	}
	t.err = trace.Start(t.file)
}

func (t *traced) End() {
	if t.file == nil {
		return
	}
	if t.err == nil {
		trace.Stop()
	}
	if err := t.file.Close(); t.err == nil {
		t.err = err
	}
	t.file = nil
}

func (t *traced) measure(ctx context.Context, f func(context.Context) (bench.Measurement, error)) (bench.Measurement, error) {
	m, err := f(bench.WithObserver(ctx, t))
	t.End()
	if err == nil && t.err != nil {
		err = fmt.Errorf("bench: trace: %w", t.err)
	}
	return m, err
}

func (t *traced) Produce(ctx context.Context, w bench.Workload) (bench.Measurement, error) {
	return t.measure(ctx, func(ctx context.Context) (bench.Measurement, error) { return t.Generator.Produce(ctx, w) })
}

func (t *traced) Consume(ctx context.Context, w bench.Workload) (bench.Measurement, error) {
	return t.measure(ctx, func(ctx context.Context) (bench.Measurement, error) { return t.Generator.Consume(ctx, w) })
}
