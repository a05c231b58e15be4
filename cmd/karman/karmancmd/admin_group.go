package karmancmd

import (
	"fmt"
	"io"
	"strconv"

	"github.com/karmanmq/karman/cmd/karman/internal/admin"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newAdminGroupCmd(f *adminFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "group",
		Short: "Create, list, describe, update and delete consumer groups; ask their consumers how they are doing",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		newGroupCreateCmd(f),
		newGroupListCmd(f),
		newGroupDescribeCmd(f),
		newGroupStatusCmd(f),
		newGroupUpdateCmd(f),
		newGroupDeleteCmd(f),
	)
	return cmd
}

// groupFlags are the settings of group create and group update.
type groupFlags struct {
	fifo, broadcast, consume bool
	maxAttempts              int32
}

func (g *groupFlags) bind(fs *pflag.FlagSet) {
	fs.BoolVar(&g.fifo, "fifo", false, "consume in order: each queue (or message group) by one consumer, one message at a time")
	fs.BoolVar(&g.broadcast, "broadcast", false, "broadcasting: every consumer of the group gets every message")
	fs.Int32Var(&g.maxAttempts, "max-attempts", admin.DefaultMaxAttempts, "deliveries of a message, the first included, before it goes to the dead-letter topic %DLQ%<group>")
	fs.BoolVar(&g.consume, "consume", true, "let the group consume (--consume=false stops delivery to it)")
}

// settings returns the flags given (all of them on create).
func (g *groupFlags) settings(cmd *cobra.Command, create bool) (admin.GroupSettings, error) {
	var s admin.GroupSettings
	changed := func(flag string) bool { return create || cmd.Flags().Changed(flag) }
	if changed("fifo") {
		s.FIFO = &g.fifo
	}
	if changed("broadcast") {
		s.Broadcast = &g.broadcast
	}
	if changed("max-attempts") {
		if g.maxAttempts < 1 {
			return s, fmt.Errorf("--max-attempts %d: want at least 1", g.maxAttempts)
		}
		s.MaxAttempts = &g.maxAttempts
	}
	if changed("consume") {
		s.ConsumeEnabled = &g.consume
	}
	return s, nil
}

// groupKind describes a group's consumption for people.
func groupKind(g admin.GroupInfo) string {
	order, model := "concurrent", "clustering"
	if g.FIFO {
		order = "FIFO"
	}
	if g.Broadcast {
		model = "broadcasting"
	}
	consume := "consuming"
	if !g.ConsumeEnabled {
		consume = "consumption disabled"
	}
	return fmt.Sprintf("%s, %s, max attempts %d, %s", order, model, g.MaxAttempts, consume)
}

func newGroupCreateCmd(f *adminFlags) *cobra.Command {
	g := &groupFlags{}
	var cluster string
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a consumer group on every broker master of the cluster",
		Long: `Create a consumer group on every broker master of the cluster
(UPDATE_AND_CREATE_SUBSCRIPTIONGROUP). It fails when a broker has the group
already; change an existing group with "group update".

--max-attempts counts every delivery of a message, the first included:
RocketMQ's retryMaxTimes is max-attempts - 1. The default, 17, is
RocketMQ's default of 16 retries.`,
		Example: `  karman admin group create billing --fifo --max-attempts 5`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.settings(cmd, true)
			if err != nil {
				return err
			}
			return f.run(cmd, func(c *admin.Client) (any, error) {
				return c.CreateGroup(cmd.Context(), args[0], cluster, s)
			}, func(w io.Writer, v any) {
				ch := v.(*admin.GroupChange)
				fmt.Fprintf(w, "created consumer group %s (%s) on %s\n", ch.Group.Group, groupKind(ch.Group), brokerNames(ch.Brokers))
			})
		},
	}
	fs := sortedFlags(cmd.Flags())
	g.bind(fs)
	fs.StringVar(&cluster, "cluster", "", "cluster to create the group in (default: the only cluster)")
	return cmd
}

func newGroupUpdateCmd(f *adminFlags) *cobra.Command {
	g := &groupFlags{}
	cmd := &cobra.Command{
		Use:   "update NAME",
		Short: "Change the settings of a consumer group",
		Long: `Change a consumer group on every broker master that has it; only the
settings given change.`,
		Example: `  karman admin group update billing --max-attempts 10
  karman admin group update billing --consume=false`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := g.settings(cmd, false)
			if err != nil {
				return err
			}
			return f.run(cmd, func(c *admin.Client) (any, error) {
				return c.UpdateGroup(cmd.Context(), args[0], s)
			}, func(w io.Writer, v any) {
				ch := v.(*admin.GroupChange)
				fmt.Fprintf(w, "updated consumer group %s (%s) on %s\n", ch.Group.Group, groupKind(ch.Group), brokerNames(ch.Brokers))
			})
		},
	}
	g.bind(sortedFlags(cmd.Flags()))
	return cmd
}

// groupList is the JSON document of group list.
type groupList struct {
	Groups []admin.GroupInfo `json:"groups"`
}

func newGroupListCmd(f *adminFlags) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the consumer groups of the brokers",
		Long: `List the consumer groups of every broker master
(GET_ALL_SUBSCRIPTIONGROUP_CONFIG). RocketMQ's own groups are left out
unless --all.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(c *admin.Client) (any, error) {
				gs, err := c.ListGroups(cmd.Context(), all)
				return &groupList{Groups: gs}, err
			}, func(w io.Writer, v any) {
				row(w, "GROUP", "ORDER", "MODEL", "MAX ATTEMPTS", "CONSUME", "BROKERS")
				for _, g := range v.(*groupList).Groups {
					order, model := "concurrent", "clustering"
					if g.FIFO {
						order = "FIFO"
					}
					if g.Broadcast {
						model = "broadcasting"
					}
					row(w, g.Group, order, model, g.MaxAttempts, yesNo(g.ConsumeEnabled), joinOrDash(g.Brokers))
				}
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include RocketMQ's own groups")
	return cmd
}

func newGroupDescribeCmd(f *adminFlags) *cobra.Command {
	var topic string
	cmd := &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a consumer group's settings, members and lag",
		Long: `Show a consumer group's settings, its online members and their
subscriptions (GET_CONSUMER_CONNECTION_LIST), and for every queue it
consumes the queue's max offset, the group's committed offset and the
difference, its lag (GET_CONSUME_STATS).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(c *admin.Client) (any, error) {
				return c.DescribeGroup(cmd.Context(), args[0], topic)
			}, func(w io.Writer, v any) { writeGroupDescription(w, v.(*admin.GroupDescription)) })
		},
	}
	cmd.Flags().StringVar(&topic, "topic", "", "show the lag in this topic only (default: every topic the group consumes)")
	return cmd
}

func writeGroupDescription(w io.Writer, d *admin.GroupDescription) {
	row(w, "group:", d.Group)
	if d.Config != nil {
		row(w, "settings:", groupKind(*d.Config))
		row(w, "brokers:", joinOrDash(d.Config.Brokers))
	} else {
		row(w, "settings:", "- (no broker has the group's configuration)")
	}
	online := "no"
	if d.Online {
		online = fmt.Sprintf("yes, %d member(s), %s, %s, %s", len(d.Members), d.ConsumeType, d.MessageModel, d.ConsumeFromWhere)
	}
	row(w, "online:", online)
	row(w, "total lag:", d.TotalLag)
	if len(d.Members) > 0 {
		fmt.Fprintln(w)
		row(w, "MEMBER", "ADDRESS", "LANGUAGE", "VERSION", "BROKERS")
		for _, m := range d.Members {
			row(w, m.ClientID, orDash(m.ClientAddr), orDash(m.Language), m.Version, joinOrDash(m.Brokers))
		}
	}
	writeSubscriptions(w, d.Subscriptions)
	fmt.Fprintln(w)
	row(w, "TOPIC", "BROKER", "QUEUE", "BROKER OFFSET", "CONSUMER OFFSET", "LAG", "LAST CONSUMED")
	for _, q := range d.Queues {
		row(w, q.Topic, q.BrokerName, q.QueueID, q.BrokerOffset, q.ConsumerOffset, q.Lag, formatMillis(q.LastTimestamp))
	}
}

// writeSubscriptions writes a table of subscriptions, after a blank line,
// when there are any.
func writeSubscriptions(w io.Writer, subs []admin.Subscription) {
	if len(subs) == 0 {
		return
	}
	fmt.Fprintln(w)
	row(w, "TOPIC", "TYPE", "EXPRESSION")
	for _, s := range subs {
		row(w, s.Topic, orDash(s.ExpressionType), orDash(s.Expression))
	}
}

func newGroupStatusCmd(f *adminFlags) *cobra.Command {
	var client string
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Ask a consumer group's online consumers for their own account of their queues",
		Long: `Ask every online consumer of a group (or the one --client names) how it
is doing, through a broker it is connected to (GET_CONSUMER_RUNNING_INFO,
which the broker passes on to the consumer): its settings, its
subscriptions, for every queue assigned to it the offset it will commit
next, the messages it has pulled and not yet consumed, its lock and when
it last pulled and consumed, and its recent rates per topic. A consumer
that does not answer is listed with the error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(c *admin.Client) (any, error) {
				return c.GroupStatus(cmd.Context(), args[0], client)
			}, func(w io.Writer, v any) { writeGroupStatus(w, v.([]admin.ConsumerStatus)) })
		},
	}
	cmd.Flags().StringVar(&client, "client", "", "ask only this consumer (its client id, as group describe lists it)")
	return cmd
}

// statusProperties are the client properties group status shows, in order.
var statusProperties = []struct{ key, label string }{
	{"PROP_CLIENT_VERSION", "version:"},
	{"PROP_CONSUME_TYPE", "consume type:"},
	{"PROP_CONSUMEORDERLY", "orderly:"},
	{"PROP_THREADPOOL_CORE_SIZE", "threads:"},
	{"PROP_CONSUMER_START_TIMESTAMP", "started:"},
}

func writeGroupStatus(w io.Writer, list []admin.ConsumerStatus) {
	for i, s := range list {
		if i > 0 {
			fmt.Fprintln(w)
		}
		row(w, "consumer:", s.ClientID)
		row(w, "asked by:", s.Broker)
		if s.Error != "" {
			row(w, "error:", s.Error)
			continue
		}
		for _, p := range statusProperties {
			if v, ok := s.Properties[p.key]; ok {
				if p.key == "PROP_CONSUMER_START_TIMESTAMP" {
					if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
						v = formatMillis(ms)
					}
				}
				row(w, p.label, v)
			}
		}
		writeSubscriptions(w, s.Subscriptions)
		fmt.Fprintln(w)
		row(w, "TOPIC", "BROKER", "QUEUE", "COMMIT OFFSET", "CACHED", "CACHED MIB", "LOCKED", "LAST PULL", "LAST CONSUME")
		for _, q := range s.Queues {
			row(w, q.Topic, q.BrokerName, q.QueueID, q.CommitOffset, q.CachedMsgCount, q.CachedMsgSizeInMiB, q.Locked,
				formatMillis(q.LastPullTimestamp), formatMillis(q.LastConsumeTimestamp))
		}
		if len(s.Rates) > 0 {
			fmt.Fprintln(w)
			row(w, "TOPIC", "PULL/S", "PULL RT MS", "CONSUMED/S", "FAILED/S", "CONSUME RT MS", "FAILED (1H)")
			for _, r := range s.Rates {
				row(w, r.Topic, fmt.Sprintf("%.1f", r.PullTPS), fmt.Sprintf("%.1f", r.PullRT), fmt.Sprintf("%.1f", r.ConsumeOKTPS),
					fmt.Sprintf("%.1f", r.ConsumeFailedTPS), fmt.Sprintf("%.1f", r.ConsumeRT), r.ConsumeFailedMsgs)
			}
		}
	}
}

func newGroupDeleteCmd(f *adminFlags) *cobra.Command {
	var clean bool
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a consumer group from the brokers",
		Long:  `Delete a consumer group from every broker master that has it (DELETE_SUBSCRIPTIONGROUP).`,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(c *admin.Client) (any, error) {
				return c.DeleteGroup(cmd.Context(), args[0], clean)
			}, func(w io.Writer, v any) {
				d := v.(*admin.GroupDeletion)
				fmt.Fprintf(w, "deleted consumer group %s from %s\n", d.Group, brokerNames(d.Brokers))
			})
		},
	}
	cmd.Flags().BoolVar(&clean, "clean-offsets", false, "also delete the group's committed offsets")
	return cmd
}
