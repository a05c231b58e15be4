package protobench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/apache/rocketmq-client-go/v2/rlog"
	"github.com/spf13/cobra"

	"github.com/karmanmq/karman/cmd/karman/internal/chaos"
	"github.com/karmanmq/karman/cmd/karman/internal/progress"
)

// errNoKarman means the karman binary the cluster runs was not found.
var errNoKarman = errors.New("chaos: karman not found")

// newChaosCmd returns "chaos": one run of the fault-injection harness
// per fault named, one result line each.
func newChaosCmd() *cobra.Command {
	var (
		faults   string
		cfg      chaos.Config
		karman   string
		network  string
		asJSON   bool
		verbose  bool
		failFast bool
		hold     bool
		// showProgress draws the progress line when stderr is not a
		// terminal too.
		showProgress bool
	)
	cmd := &cobra.Command{
		Use:   "chaos --fault F [flags]",
		Short: "Inject a fault into a local Karman cluster under load and check what was lost",
		Long: `Start a cluster of karman processes (three name servers each with a
controller node, two broker groups of a master and a replica that take
their roles from the controllers), send keyed messages with the RocketMQ
Go client while a push consumer receives them, inject one fault into
group broker-a, restore the victim, and judge the history: acknowledged
messages lost, messages delivered twice, per-key order, the failover
time (fault to a new master routed by the name servers and acknowledging
a probe send) and the client recovery time (fault to the Go client's
first acknowledged send to the group after it; the client refreshes its
routes every 30 s, which is most of it after a master fault).

Faults: ` + strings.Join(chaos.Faults, ", ") + ` (or "all").
delay-replication and lossy-replication put a TCP proxy of the harness
in front of each broker's replication port (the kernel may have no
netem): for twice the heartbeat timeout it holds every chunk --delay,
and with lossy-replication stalls or resets the stream with probability
--loss per chunk; the master stays master.
As root with the ip command, each process runs in a network namespace of
its own on a bridge the run creates and removes; otherwise (or with
--network loopback) on loopback, where partition-master is refused.
One line per run: JSON with --json, else text. Every run is bounded: the
sends last --duration, then at most --recovery-timeout more until the
group acknowledges again, then at most --drain-timeout for the consumer.

With --hold instead of --fault, the cluster starts without a workload,
prints "karman: namesrv listening on <addr>" for each name server and
"karman: ready" (its topic is ` + chaos.Topic + `), and runs until
interrupted: for "karman bench produce --addr <addr> --topic
` + chaos.Topic + `" against a replicated cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if hold == (faults != "") {
				return errors.New("chaos: give --fault or --hold")
			}
			names := strings.Split(faults, ",")
			if hold {
				names = nil
			}
			if faults == "all" {
				names = chaos.Faults
			}
			switch network {
			case "auto":
				cfg.Cluster.Netns = chaos.NetnsSupport() == nil
			case "netns":
				if err := chaos.NetnsSupport(); err != nil {
					return err
				}
				cfg.Cluster.Netns = true
			case "loopback":
			default:
				return fmt.Errorf("chaos: --network %q: want auto, netns or loopback", network)
			}
			for _, f := range names {
				if err := chaos.CheckFault(f, cfg.Cluster.Netns); err != nil {
					return err
				}
			}
			if cfg.Cluster.Replication != "sync" && cfg.Cluster.Replication != "async" {
				return fmt.Errorf("chaos: --replication %q: want sync or async", cfg.Cluster.Replication)
			}
			if cfg.Cluster.Delay < 0 || !(cfg.Cluster.Loss > 0 && cfg.Cluster.Loss <= 1) {
				return fmt.Errorf("chaos: --delay %s, --loss %v: want a delay of 0 or more and a loss in (0, 1]", cfg.Cluster.Delay, cfg.Cluster.Loss)
			}
			if cfg.Duration < 2*time.Second {
				return fmt.Errorf("chaos: --duration %s: at least 2s", cfg.Duration)
			}
			bin, err := findKarman(karman)
			if err != nil {
				return err
			}
			cfg.Cluster.Binary = bin
			rlog.SetLogLevel("error")
			if verbose {
				errOut := cmd.ErrOrStderr()
				cfg.Cluster.Log = func(format string, args ...any) {
					fmt.Fprintf(errOut, "chaos: %s\n", strings.TrimPrefix(fmt.Sprintf(format, args...), "chaos: "))
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if hold {
				return holdCluster(ctx, cmd.OutOrStdout(), cfg.Cluster)
			}
			// The progress line names the fault that runs (not with
			// --verbose, whose lines would break it).
			bar := progress.Spinner(cmd.ErrOrStderr(), "chaos", showProgress && !verbose)
			stopSpin := bar.Spin(200 * time.Millisecond)
			defer bar.Finish()
			defer stopSpin()
			stdout := bar.ClearBefore(cmd.OutOrStdout())
			var failed []string
			for i, f := range names {
				run := cfg
				run.Fault = f
				bar.Describe(fmt.Sprintf("chaos: %s (%d of %d), %s replication", f, i+1, len(names), cfg.Cluster.Replication))
				res, err := chaos.Run(ctx, run)
				if err != nil {
					if ctx.Err() != nil || failFast {
						return err
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "chaos: %s: %v\n", f, err)
					failed = append(failed, f)
					continue
				}
				if err := printChaos(stdout, res, asJSON); err != nil {
					return err
				}
			}
			if len(failed) > 0 {
				return fmt.Errorf("chaos: runs failed: %s", strings.Join(failed, ", "))
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	fs.StringVar(&faults, "fault", "", "the fault: "+strings.Join(chaos.Faults, ", ")+"; several separated by commas, or all")
	fs.StringVar(&cfg.Cluster.Replication, "replication", "sync", "sync or async replication in the broker groups")
	fs.DurationVar(&cfg.Duration, "duration", 30*time.Second, "how long the workload sends; the fault comes after a quarter of it")
	fs.BoolVar(&asJSON, "json", false, "print one JSON line per run")
	fs.StringVar(&network, "network", "auto", "netns (a namespace per process; root and ip), loopback, or auto: netns when possible")
	fs.DurationVar(&cfg.Cluster.Delay, "delay", 20*time.Millisecond, "with delay-replication and lossy-replication: how long the proxies in front of the replication ports hold each chunk")
	fs.Float64Var(&cfg.Cluster.Loss, "loss", 0.02, "with lossy-replication: the probability per chunk that the proxies stall the stream 200ms or (one time in four) reset it")
	fs.DurationVar(&cfg.Cluster.HeartbeatTimeout, "heartbeat-timeout", 2*time.Second, "the controllers' --broker-heartbeat-timeout; brokers send heartbeats every quarter of it and hold a lease of half")
	fs.IntVar(&cfg.Workload.Keys, "keys", 8, "message keys, each sent in order by one sender, spread over both groups")
	fs.IntVar(&cfg.Workload.Rate, "rate", 200, "sends per second over all keys")
	fs.DurationVar(&cfg.RecoveryTimeout, "recovery-timeout", 40*time.Second, "how long sends go on past --duration until the faulted group acknowledges one")
	fs.DurationVar(&cfg.DrainTimeout, "drain-timeout", 45*time.Second, "how long to wait for the consumer to receive every acknowledged message")
	fs.StringVar(&karman, "karman", "", "the karman binary the cluster runs (default: karman beside this program, else on the PATH)")
	fs.BoolVarP(&verbose, "verbose", "v", false, "log each step to standard error")
	fs.BoolVar(&failFast, "fail-fast", false, "stop at the first run that fails")
	fs.BoolVar(&showProgress, "progress", false, "draw the progress line on stderr even when it is not a terminal")
	fs.BoolVar(&hold, "hold", false, "start the cluster without a workload or a fault and run it until interrupted")
	return cmd
}

// holdCluster runs a cluster until ctx ends, announcing its name servers.
func holdCluster(ctx context.Context, w io.Writer, opts chaos.ClusterOptions) error {
	c, err := chaos.StartCluster(ctx, opts)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, ns := range c.NameServers() {
		fmt.Fprintf(w, "karman: namesrv listening on %s\n", ns)
	}
	fmt.Fprintln(w, "karman: ready")
	<-ctx.Done()
	return nil
}

// findKarman returns the karman binary to run: flag when set, else karman
// beside this executable, else on the PATH.
func findKarman(flag string) (string, error) {
	if flag != "" {
		path, err := exec.LookPath(flag)
		if err != nil {
			return "", fmt.Errorf("%w: --karman %s: %w", errNoKarman, flag, err)
		}
		return filepath.Abs(path)
	}
	if exe, err := os.Executable(); err == nil {
		if path, err := exec.LookPath(filepath.Join(filepath.Dir(exe), "karman")); err == nil {
			return path, nil
		}
	}
	path, err := exec.LookPath("karman")
	if err != nil {
		return "", fmt.Errorf("%w beside this program or on the PATH; build it with go build -o karman ./cmd/karman, or pass --karman", errNoKarman)
	}
	return filepath.Abs(path)
}

// printChaos prints a run's result as one line.
func printChaos(w io.Writer, r *chaos.Result, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	_, err := fmt.Fprintf(w, "%-22s %-5s %-8s victim %-3s acked %6d failed %6d consumed %6d lost %d lost_final %d duplicated %d order_violations %d failover %s recovery %s victim_acks %d max_write_gap %s\n",
		r.Fault, r.Replication, r.Network, r.Victim, r.Acked, r.Failed, r.Consumed, r.Lost, r.LostFinal, r.Duplicated, r.OrderViolations,
		ms(r.FailoverMS), ms(r.RecoveryMS), r.VictimAcks, ms(r.MaxWriteGapMS))
	return err
}

// ms formats milliseconds, "-" for none.
func ms(v int64) string {
	if v < 0 {
		return "-"
	}
	return (time.Duration(v) * time.Millisecond).String()
}
