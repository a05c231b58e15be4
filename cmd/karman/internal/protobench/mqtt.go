package protobench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/karmanmq/karman/bench"
	mqttbench "github.com/karmanmq/karman/bench/mqtt"
	"github.com/karmanmq/karman/cmd/karman/internal/progress"
	"github.com/karmanmq/karman/protocol/mqtt/packet"
	"github.com/spf13/cobra"
)

// mqttShapes are the shapes of "mqtt" in the order they run.
var mqttShapes = []string{"p2p", "fanout", "shared", "idle"}

type mqttBench struct {
	o        mqttbench.Options
	addr     string
	system   string
	pid      int
	peer     string
	shapes   string
	version  int
	qos      int
	progress bool
}

func newBenchMQTTCmd() *cobra.Command {
	b := &mqttBench{}
	cmd := &cobra.Command{
		Use:   "mqtt",
		Short: "Measure an MQTT broker, side by side with mosquitto",
		Long: `Drive the MQTT broker at --addr (labelled --system, "karman" by default) and,
with --peer mosquitto, a mosquitto started here (Debian's, from the PATH)
with the same shapes, one system after the other:

  p2p     N publishers → N subscribers (--pairs), one topic per pair, --count
          messages of --size bytes in all: phases "p2p_qos0" and "p2p_qos1"
          (QoS 1 publishers keep --inflight messages unacknowledged)
  fanout  1 publisher → --fanout-subscribers subscribers of one topic,
          --fanout-count messages at --qos; msgs_per_sec counts deliveries
  shared  --shared-publishers publishers → --shared-subscribers members of
          one shared subscription ($share/bench/...), --count messages at --qos
  idle    --connections idle connections, opened by worker processes of at
          most --per-process connections each, from source addresses
          127.0.0.2, 127.0.0.3, ...; msgs_per_sec is connections per second,
          the latencies CONNECT to CONNACK (runs only with --connections)

Latency runs from publish to delivery. A phase ends when every delivery
arrived or none arrived for --drain-timeout; what is missing is "lost".
rss_mb is the broker's resident memory at the end of the phase: known for
the peer, and for --addr when --pid names its process.

The machine and the flags go to stderr; stdout gets one JSON line per
system and phase:

  {"system":"mosquitto","phase":"p2p_qos1","msgs_per_sec":…,"p50_us":…,
   "p99_us":…,"rss_mb":…,"delivered":…,"lost":…,…}`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return b.run(ctx, cmd)
		},
	}
	f := cmd.Flags()
	f.SortFlags = false
	f.StringVar(&b.addr, "addr", "", "host:port of the MQTT broker to measure")
	f.StringVar(&b.system, "system", "karman", "name of the broker at --addr in the results")
	f.IntVar(&b.pid, "pid", 0, "process id of the broker at --addr, for rss_mb")
	f.StringVar(&b.peer, "peer", "", "also measure, with the same shapes: mosquitto")
	f.StringVar(&b.shapes, "shapes", "p2p,fanout,shared,idle", "shapes to run, separated by commas: "+strings.Join(mqttShapes, ", "))
	f.IntVar(&b.version, "mqtt-version", 5, "protocol level of the clients: 4 (3.1.1) or 5")
	f.IntVar(&b.o.Size, "size", 256, "payload bytes (at least 8: the send time)")
	f.Int64Var(&b.o.Count, "count", 100_000, "messages published in the p2p and shared phases")
	f.IntVar(&b.o.Pairs, "pairs", 10, "publisher/subscriber pairs of p2p")
	f.IntVar(&b.o.Inflight, "inflight", 16, "unacknowledged QoS 1 messages per publisher")
	f.IntVar(&b.qos, "qos", 0, "QoS of fanout and shared: 0 or 1")
	f.IntVar(&b.o.FanoutSubscribers, "fanout-subscribers", 1000, "subscribers of fanout")
	f.Int64Var(&b.o.FanoutCount, "fanout-count", 100, "messages the fanout publisher sends")
	f.IntVar(&b.o.SharedPublishers, "shared-publishers", 100, "publishers of shared")
	f.IntVar(&b.o.SharedSubscribers, "shared-subscribers", 4, "members of the shared subscription")
	f.IntVar(&b.o.Connections, "connections", 0, "idle connections (0: no idle phase)")
	f.IntVar(&b.o.PerProcess, "per-process", 9000, "idle connections per worker process")
	f.DurationVar(&b.o.DrainTimeout, "drain-timeout", 3*time.Second, "end a phase when nothing arrived for this long after publishing")
	f.DurationVar(&b.o.Timeout, "timeout", 2*time.Minute, "bound of one phase")
	f.BoolVar(&b.progress, "progress", false, "draw the progress line on stderr even when it is not a terminal")
	return cmd
}

func (b *mqttBench) check() error {
	if b.addr == "" && b.peer == "" {
		return errors.New("bench mqtt: give --addr (an MQTT broker, such as Karman's MQTT listener) or --peer mosquitto")
	}
	if b.peer != "" && b.peer != "mosquitto" {
		return fmt.Errorf("bench mqtt: --peer %q: want mosquitto", b.peer)
	}
	for _, s := range strings.Split(b.shapes, ",") {
		if !slices.Contains(mqttShapes, s) {
			return fmt.Errorf("bench mqtt: --shapes: unknown shape %q: want %s", s, strings.Join(mqttShapes, ", "))
		}
	}
	if b.version < 0 || b.version > 255 || b.qos < 0 || b.qos > 255 {
		return fmt.Errorf("bench mqtt: --mqtt-version %d or --qos %d out of range", b.version, b.qos)
	}
	b.o.Version, b.o.QoS = byte(b.version), byte(b.qos)
	return b.o.Validate()
}

func (b *mqttBench) run(ctx context.Context, cmd *cobra.Command) (err error) {
	if err := b.check(); err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	bench.WriteMachine(stderr, flagLine(cmd.Flags()))
	if limit, err := mqttbench.RaiseFileLimit(); err == nil && limit > 0 {
		fmt.Fprintf(stderr, "open files: %d per process\n", limit)
	}
	var targets []mqttbench.Target
	if b.addr != "" {
		targets = append(targets, mqttbench.Target{System: b.system, Addr: b.addr, PID: b.pid})
		fmt.Fprintf(stderr, "%s: %s\n", b.system, b.addr)
	}
	if b.peer == "mosquitto" {
		m, err := mqttbench.StartMosquitto(ctx)
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, m.Stop()) }()
		fmt.Fprintf(stderr, "mosquitto: %s\n", m)
		targets = append(targets, mqttbench.Target{System: "mosquitto", Addr: m.Addr, PID: m.PID()})
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	worker := func(w mqttbench.IdleWorker) *exec.Cmd {
		return exec.CommandContext(ctx, exe, "mqtt-idle-worker", "--addr", w.Addr, "--count", strconv.Itoa(w.Count),
			"--local", w.LocalIP, "--mqtt-version", strconv.Itoa(int(w.Version)), "--prefix", w.Prefix)
	}
	// The progress line names the system and shape that run.
	bar := progress.Spinner(stderr, "bench mqtt", b.progress)
	stopSpin := bar.Spin(200 * time.Millisecond)
	defer bar.Finish()
	defer stopSpin()
	enc := json.NewEncoder(bar.ClearBefore(cmd.OutOrStdout()))
	shapes := strings.Split(b.shapes, ",")
	for _, t := range targets {
		for _, shape := range mqttShapes {
			if !slices.Contains(shapes, shape) {
				continue
			}
			bar.Describe(fmt.Sprintf("bench mqtt: %s %s", t.System, shape))
			var rs []mqttbench.Result
			var r mqttbench.Result
			switch shape {
			case "p2p":
				for _, qos := range []byte{0, 1} {
					if r, err = mqttbench.P2P(ctx, t, b.o, qos); err != nil {
						break
					}
					rs = append(rs, r)
				}
			case "fanout":
				r, err = mqttbench.Fanout(ctx, t, b.o)
				rs = append(rs, r)
			case "shared":
				r, err = mqttbench.Shared(ctx, t, b.o)
				rs = append(rs, r)
			case "idle":
				if b.o.Connections == 0 {
					continue
				}
				r, err = mqttbench.Idle(ctx, t, b.o, worker)
				rs = append(rs, r)
			}
			if err != nil {
				return fmt.Errorf("bench mqtt: %s %s: %w", t.System, shape, err)
			}
			for _, r := range rs {
				if err := enc.Encode(r); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// newMQTTIdleWorkerCmd is the hidden command an idle phase runs in each
// worker process.
func newMQTTIdleWorkerCmd() *cobra.Command {
	var (
		w       mqttbench.IdleWorker
		version int
	)
	cmd := &cobra.Command{
		Use:    "mqtt-idle-worker",
		Short:  "Hold idle MQTT connections for the idle phase of mqtt",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w.Version = byte(version)
			if w.Version != packet.Version311 && w.Version != packet.Version5 {
				return fmt.Errorf("bench mqtt: --mqtt-version %d", version)
			}
			mqttbench.RaiseFileLimit()
			return mqttbench.RunIdleWorker(cmd.Context(), w, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&w.Addr, "addr", "", "broker host:port")
	f.IntVar(&w.Count, "count", 0, "connections")
	f.StringVar(&w.LocalIP, "local", "", "source address")
	f.IntVar(&version, "mqtt-version", 5, "protocol level")
	f.StringVar(&w.Prefix, "prefix", "kb-idle", "client id prefix")
	return cmd
}
