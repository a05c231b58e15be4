package karmancmd

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/karmanmq/karman/cmd/karman/internal/admin"
	"github.com/karmanmq/karman/cmd/karman/internal/progress"
	"github.com/spf13/cobra"
)

func newAdminBrokerCmd(f *adminFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Show and change brokers' configuration",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newBrokerConfigCmd(f))
	return cmd
}

// brokerConfigList is the JSON document of broker config get.
type brokerConfigList struct {
	Brokers []admin.BrokerConfig `json:"brokers"`
}

func newBrokerConfigCmd(f *adminFlags) *cobra.Command {
	var broker string
	cmd := &cobra.Command{
		Use:   "config [get [KEY] | set KEY VALUE]",
		Short: "Show the brokers' configuration, or change a setting while they run",
		Long: `Without arguments or with get, show each broker master's configuration under
RocketMQ's names (GET_BROKER_CONFIG); get KEY shows one setting.

set KEY VALUE changes a setting on every master (or on --broker) with
UPDATE_BROKER_CONFIG, until the broker restarts. Karman brokers change
these while they run and refuse the others, saying so:

  suspendMaxTimeMills   longest a pull waits for messages (long polling),
                        in ms, 1 to 29999

Everything else is set with the flags of karman serve at start-up.`,
		Example: `  karman admin broker config
  karman admin broker config get flushDiskType
  karman admin broker config set suspendMaxTimeMills 5000`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			switch args[0] {
			case "get":
				return cobra.RangeArgs(1, 2)(cmd, args)
			case "set":
				if len(args) != 3 {
					return fmt.Errorf("set needs KEY and VALUE, got %d argument(s)", len(args)-1)
				}
				return nil
			}
			return fmt.Errorf("unknown action %q: want get or set", args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if len(args) > 0 && args[0] == "set" {
				return f.run(cmd, func(c *admin.Client) (any, error) {
					return c.SetBrokerConfig(ctx, broker, args[1], args[2])
				}, func(w io.Writer, v any) {
					ch := v.(*admin.ConfigChange)
					fmt.Fprintf(w, "%s=%s on %s\n", ch.Key, ch.Value, joinOrDash(ch.Brokers))
				})
			}
			key := ""
			if len(args) == 2 {
				key = args[1]
			}
			return f.run(cmd, func(c *admin.Client) (any, error) {
				cs, err := c.BrokerConfigs(ctx, broker)
				if err != nil {
					return nil, err
				}
				if key != "" {
					for i := range cs {
						v, ok := cs[i].Settings[key]
						if !ok {
							return nil, fmt.Errorf("broker %s has no setting %s", cs[i].BrokerName, key)
						}
						cs[i].Settings = map[string]string{key: v}
					}
				}
				return &brokerConfigList{Brokers: cs}, nil
			}, func(w io.Writer, v any) {
				row(w, "BROKER", "KEY", "VALUE")
				for _, b := range v.(*brokerConfigList).Brokers {
					for _, k := range b.SortedSettings() {
						row(w, b.BrokerName, k, b.Settings[k])
					}
				}
			})
		},
	}
	cmd.Flags().StringVar(&broker, "broker", "", "only this broker (default: every master)")
	return cmd
}

func newAdminStatsCmd(f *adminFlags) *cobra.Command {
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Show message rates per topic and per consumer group",
		Long: `Read every topic's stored messages (GET_TOPIC_STATS_INFO) and every
consumer group's committed offsets (GET_CONSUME_STATS) twice, --interval
apart, and show the rates: messages stored per second per topic, messages
consumed (committed) per second per group and topic, and each group's lag.
System topics and groups are left out. A bar on standard error shows the
wait when it is a terminal.`,
		Example: `  karman admin stats
  karman admin stats --interval 10s --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if interval < 100*time.Millisecond {
				return fmt.Errorf("--interval %s: want at least 100ms", interval)
			}
			return f.run(cmd, func(c *admin.Client) (any, error) {
				ctx := cmd.Context()
				a, err := c.SampleCounts(ctx)
				if err != nil {
					return nil, err
				}
				if err := waitWithProgress(ctx, cmd.ErrOrStderr(), interval, "sampling"); err != nil {
					return nil, err
				}
				b, err := c.SampleCounts(ctx)
				if err != nil {
					return nil, err
				}
				return admin.RatesBetween(a, b), nil
			}, func(w io.Writer, v any) {
				s := v.(*admin.Stats)
				row(w, "TOPIC", "MESSAGES", "IN/S")
				for _, t := range s.Topics {
					row(w, t.Topic, t.Messages, fmt.Sprintf("%.1f", t.InPerSec))
				}
				fmt.Fprintln(w)
				row(w, "GROUP", "TOPIC", "CONSUMED", "OUT/S", "LAG")
				for _, g := range s.Groups {
					row(w, g.Group, g.Topic, g.ConsumedTotal, fmt.Sprintf("%.1f", g.OutPerSec), g.Lag)
				}
				fmt.Fprintf(w, "\nrates over %.1f s\n", s.Interval)
			})
		},
	}
	cmd.Flags().DurationVar(&interval, "interval", 5*time.Second, "time between the two samples")
	return cmd
}

// waitWithProgress waits d (or until ctx ends), showing a bar of the
// seconds passing on w when it is a terminal.
func waitWithProgress(ctx context.Context, w io.Writer, d time.Duration, what string) error {
	steps := max(int(d/time.Second), 1)
	bar := progress.New(w, steps, what, false)
	defer bar.Finish()
	t := time.NewTimer(d)
	defer t.Stop()
	tick := time.NewTicker(d / time.Duration(steps))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			return nil
		case <-tick.C:
			bar.Add()
		}
	}
}
