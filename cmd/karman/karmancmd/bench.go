package karmancmd

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/karmanmq/karman/cmd/karman/internal/enginebench"
	"github.com/karmanmq/karman/cmd/karman/internal/progress"
	"github.com/karmanmq/karman/engine"
	"github.com/karmanmq/karman/server/config"
	"github.com/spf13/cobra"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure karman's performance",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newBenchEngineCmd())
	cmd.AddCommand(
		newBenchExecCmd("produce", "Measure producing over a protocol, side by side with a peer broker"),
		newBenchExecCmd("consume", "Measure consuming over a protocol, side by side with a peer broker"),
		newBenchExecCmd("mqtt", "Measure an MQTT broker, side by side with mosquitto"),
	)
	return cmd
}

func newBenchEngineCmd() *cobra.Command {
	var (
		o        enginebench.Options
		size     = config.ByteSize(1024)
		segment  config.ByteSize
		flush    string
		modeName string
		batch    int
	)
	cmd := &cobra.Command{
		Use:   "engine",
		Short: "Measure an embedded engine: append and read, pull, pop and ack, timers, transactions",
		Long: `Open an engine in --data (a temporary directory when not given, removed
afterwards) and create a topic, then, by --mode:

  append (default)  send --count messages of --size bytes from --producers
                    goroutines (SendBatch of --batch messages when above 1),
                    wait until every message is indexed, then pull them all
                    back, 32 per call: phases "append" and "read".
  pull              pre-load --count messages (SendBatch of 32, not
                    measured), pull them from --consumers goroutines owning
                    distinct queues, --batch (default 32) per Pull: phase
                    "pull"; then "wakeup_pull".
  pop               pre-load the same way, pop them from --consumers
                    goroutines, --batch (default 32) per Pop, and ack each:
                    phase "pop" (latency per Pop; ack_p50_us/ack_p99_us per
                    Ack); then "wakeup_pop".
  schedule          consumers wait on every queue while --producers
                    goroutines send --count timer messages (TIMER_DELIVER_MS)
                    due from --schedule-lead after the start, spread evenly
                    over --schedule-window: phase "schedule" (rate and
                    latency per Send); then "deliver", from the first due
                    time to the last arrival, with the lateness of each
                    message (arrival minus due time) as p50_us/p99_us. The
                    run fails if a message arrives early or twice.
  txn               send --count messages from --producers goroutines
                    (phase "send"), then --count half messages, each
                    committed with EndTransaction as soon as it is stored
                    (phase "txn", with "ratio" = txn rate / send rate); each
                    phase checks every message arrived exactly once.

On a terminal, a line on stderr shows the time elapsed and the phases done.

The wake-up phases send --wakeup-count messages one at a time,
--wakeup-interval apart, to an empty topic on which the consumers wait
(Pop with a wait, or WaitForArrival then Pull); latency runs from just
before the send to the moment a consumer holds the message.

The machine and the flags go to stderr; stdout gets one JSON line per
phase (and "raw_disk" with --dd) with msgs_per_sec, mb_per_sec (10^6 bytes
of message body per second) and p50_us/p99_us latency per call.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mode, err := engine.ParseFlushMode(flush)
			if err != nil {
				return err
			}
			o.Flush = mode
			if o.Mode, err = enginebench.ParseMode(modeName); err != nil {
				return err
			}
			o.Batch = batch
			switch {
			case cmd.Flags().Changed("batch"):
			case o.Mode == enginebench.ModeAppend:
				o.Batch = 1
			default:
				o.Batch = enginebench.PullBatch
			}
			o.Size = int(size)
			o.SegmentSize = int64(segment)
			o.Logger = newLogger(cmd.ErrOrStderr(), slog.LevelWarn)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			sp := progress.Spinner(cmd.ErrOrStderr(), "bench engine: running", false)
			stopSpin := sp.Spin(200 * time.Millisecond)
			defer sp.Finish()
			defer stopSpin()
			return enginebench.Run(ctx, o, sp.Phases(cmd.OutOrStdout(), "bench engine"), sp.ClearBefore(cmd.ErrOrStderr()))
		},
	}
	f := sortedFlags(cmd.Flags())
	f.StringVar(&modeName, "mode", "append", "what to measure: append, pull, pop, schedule or txn")
	f.Var(&size, "size", "message body size (bytes; KiB, MiB suffixes allowed)")
	f.Int64Var(&o.Count, "count", 1_000_000, "messages to send in total")
	f.IntVar(&batch, "batch", 0, "messages per send (SendBatch when above 1) of --mode append; with --mode pull, pop or schedule, per Pull or Pop (default 1, or 32 with those modes)")
	f.IntVar(&o.Producers, "producers", 1, "sending goroutines")
	f.IntVar(&o.Readers, "readers", 1, "pulling goroutines of --mode append (queues are shared out among them)")
	f.IntVar(&o.Consumers, "consumers", 4, "pulling or popping goroutines of --mode pull and pop")
	f.IntVar(&o.WakeupCount, "wakeup-count", 2000, "messages sent one at a time in the wake-up phases")
	f.DurationVar(&o.WakeupInterval, "wakeup-interval", 2*time.Millisecond, "pause between two sends of the wake-up phases")
	f.DurationVar(&o.ScheduleLead, "schedule-lead", 5*time.Second, "with --mode schedule, when the first message falls due, after the start (sending must finish before)")
	f.DurationVar(&o.ScheduleWindow, "schedule-window", 2*time.Second, "with --mode schedule, the span the due times are spread over (0: all due at once)")
	f.Int32Var(&o.Queues, "queues", 8, "queues of the benchmark topic")
	f.StringVar(&flush, "flush", "async", "flush policy: async or sync")
	f.Var(&segment, "segment-size", "commit-log segment size (default the engine's, 1GiB)")
	f.StringVar(&o.Data, "data", "", "data directory (default a temporary directory, removed afterwards)")
	f.BoolVar(&o.RawDisk, "dd", false, "also write and sync the same number of bytes to a plain file, for the disk's raw sequential bandwidth")
	f.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the measured phases (not the pre-load) to this file")
	return cmd
}
