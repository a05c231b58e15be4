package cli

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/karmanmq/karman/cmd/karman/internal/config"
	"github.com/karmanmq/karman/cmd/karman/internal/enginebench"
	"github.com/karmanmq/karman/engine"
	"github.com/spf13/cobra"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure karman's performance",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newBenchEngineCmd())
	return cmd
}

func newBenchEngineCmd() *cobra.Command {
	var (
		o       enginebench.Options
		size    = config.ByteSize(1024)
		segment config.ByteSize
		flush   string
	)
	cmd := &cobra.Command{
		Use:   "engine",
		Short: "Append messages to an embedded engine and read them back",
		Long: `Open an engine in --data (a temporary directory when not given, removed
afterwards), create a topic, send --count messages of --size bytes from
--producers goroutines (SendBatch of --batch messages when above 1), wait
until every message is indexed, then pull them all back, 32 per call.

The machine and the flags go to stderr; stdout gets one JSON line per
phase ("append", "read", and "raw_disk" with --dd) with msgs_per_sec,
mb_per_sec (10^6 bytes of message body per second) and p50_us/p99_us
latency per call.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mode, err := engine.ParseFlushMode(flush)
			if err != nil {
				return err
			}
			o.Flush = mode
			o.Size = int(size)
			o.SegmentSize = int64(segment)
			o.Logger = newLogger(cmd.ErrOrStderr(), slog.LevelWarn)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return enginebench.Run(ctx, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := sortedFlags(cmd.Flags())
	f.Var(&size, "size", "message body size (bytes; KiB, MiB suffixes allowed)")
	f.Int64Var(&o.Count, "count", 1_000_000, "messages to send in total")
	f.IntVar(&o.Batch, "batch", 1, "messages per send (SendBatch when above 1)")
	f.IntVar(&o.Producers, "producers", 1, "sending goroutines")
	f.IntVar(&o.Readers, "readers", 1, "pulling goroutines (queues are shared out among them)")
	f.Int32Var(&o.Queues, "queues", 8, "queues of the benchmark topic")
	f.StringVar(&flush, "flush", "async", "flush policy: async or sync")
	f.Var(&segment, "segment-size", "commit-log segment size (default the engine's, 1GiB)")
	f.StringVar(&o.Data, "data", "", "data directory (default a temporary directory, removed afterwards)")
	f.BoolVar(&o.RawDisk, "dd", false, "also write and sync the same number of bytes to a plain file, for the disk's raw sequential bandwidth")
	return cmd
}
