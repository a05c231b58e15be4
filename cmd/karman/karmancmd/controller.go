package karmancmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/karmanmq/karman/cluster/controller"
	"github.com/karmanmq/karman/server/config"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// controllerFlags are the settings of a controller node, shared by
// "karman controller" and "karman namesrv --controller".
type controllerFlags struct {
	opts  controller.Options
	peers string
	addr  string
}

func (f *controllerFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.opts.ID, "controller-id", "", "this node's id, one of --controller-peers")
	fs.StringVar(&f.peers, "controller-peers", "", "every node's raft address: id=host:port separated by commas")
	fs.StringVar(&f.addr, "controller-addr", ":9878", "address of the request API brokers call")
	fs.StringVar(&f.opts.Dir, "data", "./controller-data", "directory of the raft log and snapshots")
	fs.DurationVar(&f.opts.HeartbeatTimeout, "broker-heartbeat-timeout", 5*time.Second, "silence after which a master is replaced")
	fs.BoolVar(&f.opts.AllowUncleanElection, "allow-unclean-election", false, "elect a live broker outside the in-sync set when none in it is live (loses what only the old master held)")
}

// start opens the controller node and serves its request API; stop ends
// both. errc receives an error if the API stops serving by itself.
func (f *controllerFlags) start(out io.Writer, log *slog.Logger) (stop func(context.Context) error, errc <-chan error, err error) {
	opts := f.opts
	if opts.Peers, err = parsePeers(f.peers); err != nil {
		return nil, nil, err
	}
	if opts.HeartbeatTimeout <= 0 {
		return nil, nil, errors.New("controller: --broker-heartbeat-timeout must be positive")
	}
	if _, _, err := net.SplitHostPort(f.addr); err != nil {
		return nil, nil, fmt.Errorf("controller: --controller-addr %q: want host:port or :port: %w", f.addr, err)
	}
	opts.Logger = log
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return nil, nil, fmt.Errorf("controller: listen: %w", err)
	}
	c, err := controller.Open(opts)
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", c.Handler())
	mux.Handle("GET /metrics", promhttp.HandlerFor(controllerRegistry(c), promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	srv.RegisterOnShutdown(c.EndWatches)
	ec := make(chan error, 1)
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			ec <- err
		}
	}()
	fmt.Fprintf(out, "karman: controller listening on %s\n", ln.Addr())
	return func(ctx context.Context) error { return errors.Join(srv.Shutdown(ctx), c.Close()) }, ec, nil
}

func newControllerCmd() *cobra.Command {
	var (
		f               controllerFlags
		level           = levelFlag{new(slog.Level)}
		shutdownTimeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run one node of the replication controller quorum",
		Long: `Run one node of the controller quorum (3 or 5 nodes, on hashicorp/raft):
it keeps, for every broker group, its members, its master and the master's
epoch, and the in-sync set, and elects a new master from the in-sync set
when a master's heartbeats stop for --broker-heartbeat-timeout.

Every node is given the same --controller-peers (id=host:port of each
node's raft address, its own included); brokers reach the quorum on each
node's --controller-addr (HTTP/JSON; only the leader answers writes).
The raft log, stable store and snapshots live in --data; a node restarted
with peers other than those it stored refuses to start. "karman namesrv
--controller" runs a node next to a name server.

The request address is printed as "karman: controller listening on
<addr>", then "karman: ready". SIGINT or SIGTERM stops it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if shutdownTimeout <= 0 {
				return errors.New("controller: --shutdown-timeout must be positive")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				stop()
			}()
			log := newLogger(cmd.ErrOrStderr(), *level.l).With("module", "controller")
			stopCtl, errc, err := f.start(cmd.OutOrStdout(), log)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "karman: ready")
			select {
			case <-ctx.Done():
			case err := <-errc:
				log.Error("request API stopped", "err", err)
			}
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
			defer cancel()
			return stopCtl(sctx)
		},
	}
	fs := sortedFlags(cmd.Flags())
	f.bind(fs)
	fs.Var(level, "log-level", "log level: debug, info, warn or error")
	fs.DurationVar(&shutdownTimeout, "shutdown-timeout", config.DefaultShutdownTimeout, "time allowed for a graceful shutdown")
	return cmd
}

// parsePeers reads id=host:port,... into a map, refusing repeated ids.
func parsePeers(s string) (map[string]string, error) {
	peers := map[string]string{}
	for p := range strings.SplitSeq(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		id, addr, ok := strings.Cut(p, "=")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("controller: --controller-peers: %q: want id=host:port", p)
		}
		if _, dup := peers[id]; dup {
			return nil, fmt.Errorf("controller: --controller-peers: id %q given twice", id)
		}
		peers[id] = addr
	}
	if len(peers) == 0 {
		return nil, errors.New("controller: --controller-peers: none given")
	}
	return peers, nil
}

// controllerRegistry holds a controller node's metrics (served on
// GET /metrics of its request address) and the Go runtime's and the
// process's.
func controllerRegistry(c *controller.Controller) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), controllerCollector{c: c})
	return reg
}

var (
	ctlLeaderDesc = prometheus.NewDesc("karman_controller_leader", "1 while this node leads the controller quorum", nil, nil)
	ctlElectDesc  = prometheus.NewDesc("karman_controller_elections_total",
		"new masters this node elected while it led, by broker group and trigger (heartbeat: the master's heartbeats stopped; request: a broker asked)",
		[]string{"group", "trigger"}, nil)
	ctlNoCandDesc = prometheus.NewDesc("karman_controller_elections_no_candidate_total",
		"elections this node tried that found no live in-sync broker, by broker group", []string{"group"}, nil)
	ctlEpochDesc = prometheus.NewDesc("karman_controller_master_epoch", "each broker group's master epoch in this node's copy of the record", []string{"group"}, nil)
	ctlInSync    = prometheus.NewDesc("karman_controller_in_sync_members", "members of each broker group's in-sync set, the master included", []string{"group"}, nil)
	ctlWatches   = prometheus.NewDesc("karman_controller_watches", "brokers' watch connections open on this node (the leader holds them)", nil, nil)
	ctlMembers   = prometheus.NewDesc("karman_controller_members", "brokers registered in each broker group", []string{"group"}, nil)
)

type controllerCollector struct{ c *controller.Controller }

func (controllerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{ctlLeaderDesc, ctlElectDesc, ctlNoCandDesc, ctlEpochDesc, ctlInSync, ctlMembers, ctlWatches} {
		ch <- d
	}
}

func (cc controllerCollector) Collect(ch chan<- prometheus.Metric) {
	m := cc.c.Metrics()
	leader := 0.0
	if m.Leader {
		leader = 1
	}
	ch <- prometheus.MustNewConstMetric(ctlLeaderDesc, prometheus.GaugeValue, leader)
	ch <- prometheus.MustNewConstMetric(ctlWatches, prometheus.GaugeValue, float64(m.Watches))
	for _, e := range m.Elections {
		ch <- prometheus.MustNewConstMetric(ctlElectDesc, prometheus.CounterValue, float64(e.Count), e.Group, e.Trigger)
	}
	for g, n := range m.NoCandidate {
		ch <- prometheus.MustNewConstMetric(ctlNoCandDesc, prometheus.CounterValue, float64(n), g)
	}
	for _, g := range cc.c.Groups() {
		ch <- prometheus.MustNewConstMetric(ctlEpochDesc, prometheus.GaugeValue, float64(g.MasterEpoch), g.Name)
		ch <- prometheus.MustNewConstMetric(ctlInSync, prometheus.GaugeValue, float64(len(g.SyncStateSet)), g.Name)
		ch <- prometheus.MustNewConstMetric(ctlMembers, prometheus.GaugeValue, float64(len(g.Members)), g.Name)
	}
}
