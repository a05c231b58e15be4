package karmancmd

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/karmanmq/karman/cmd/karman/internal/admin"
	"github.com/spf13/cobra"
)

func newAdminOffsetCmd(f *adminFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "offset",
		Short: "Move consumer groups' offsets",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var (
		toTime string
		force  bool
	)
	reset := &cobra.Command{
		Use:   "reset GROUP TOPIC --to-time TIME",
		Short: "Move a group's offsets in a topic to a point in time",
		Long: `Move a consumer group's offset in every queue of a topic to the first
message stored at or after TIME (INVOKE_BROKER_TO_RESET_OFFSET; the broker
tells the group's online consumers). It prints the new offset of every
queue.

TIME is "now" (skip everything stored so far), a time relative to now
(-1h, -30m, -2d), milliseconds since the Unix epoch, or RFC 3339
(2024-05-01T12:00:00Z; without a zone it is local time).

With --force=false offsets only move back: a queue where the group is
already behind TIME keeps its offset.

A broker that cannot reset offsets itself, or (like Java brokers) only
does while a consumer of the group is online, gets the offsets committed
with UPDATE_CONSUMER_OFFSET instead; consumers that are online then would
overwrite them.`,
		Example: `  karman admin offset reset billing orders --to-time -1h
  karman admin offset reset billing orders --to-time 2024-05-01T00:00:00Z`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if toTime == "" {
				return errors.New("--to-time is required")
			}
			ts, err := admin.ParseTime(toTime, time.Now())
			if err != nil {
				return fmt.Errorf("--to-time: %w", err)
			}
			return f.run(cmd, func(c *admin.Client) (any, error) {
				return c.ResetOffset(cmd.Context(), args[0], args[1], ts.UnixMilli(), force)
			}, func(w io.Writer, v any) {
				r := v.(*admin.OffsetReset)
				fmt.Fprintf(w, "reset consumer group %s in topic %s to %s\n\n", r.Group, r.Topic, formatMillis(r.Timestamp))
				row(w, "BROKER", "QUEUE", "OFFSET", "VIA")
				for _, o := range r.Offsets {
					row(w, o.BrokerName, o.QueueID, o.Offset, o.Via)
				}
			})
		},
	}
	fs := sortedFlags(reset.Flags())
	fs.StringVar(&toTime, "to-time", "", "where to move the offsets: now, -1h, unix milliseconds or RFC 3339 (required)")
	fs.BoolVar(&force, "force", true, "move offsets forward as well as back")
	cmd.AddCommand(reset)
	return cmd
}
