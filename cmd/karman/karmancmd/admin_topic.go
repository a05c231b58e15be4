package karmancmd

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/karmanmq/karman/cmd/karman/internal/admin"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func newAdminTopicCmd(f *adminFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe, update and delete topics",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		newTopicCreateCmd(f),
		newTopicListCmd(f),
		newTopicDescribeCmd(f),
		newTopicUpdateCmd(f),
		newTopicDeleteCmd(f),
	)
	return cmd
}

// topicFlags are the settings of topic create and topic update.
type topicFlags struct {
	queues  int32
	typ     string
	perm    string
	cluster string
}

func (t *topicFlags) bind(fs *pflag.FlagSet, create bool) {
	if create {
		fs.Int32Var(&t.queues, "queues", admin.DefaultQueues, "read and write queues on each broker")
	} else {
		fs.Int32Var(&t.queues, "queues", 0, "read and write queues on each broker")
	}
	fs.StringVar(&t.typ, "type", "", "message type: NORMAL, FIFO, DELAY, TRANSACTION or MIXED (default: none, which accepts every type)")
	fs.StringVar(&t.perm, "perm", "rw", "permission: rw, r (read only) or w (write only)")
}

// spec checks the flags and returns the topic spec; on update, only the
// flags given count.
func (t *topicFlags) spec(cmd *cobra.Command, name string, create bool) (admin.TopicSpec, error) {
	s := admin.TopicSpec{Name: name, Cluster: t.cluster}
	changed := func(flag string) bool { return create || cmd.Flags().Changed(flag) }
	if changed("queues") {
		if t.queues < 1 {
			return s, fmt.Errorf("--queues %d: want at least 1", t.queues)
		}
		s.Queues = t.queues
	}
	if t.typ != "" {
		typ, err := admin.ParseMessageType(t.typ)
		if err != nil {
			return s, fmt.Errorf("--type: %w", err)
		}
		s.Type = typ
	}
	if changed("perm") {
		p, err := admin.ParsePerm(t.perm)
		if err != nil {
			return s, fmt.Errorf("--perm: %w", err)
		}
		s.Perm = p
	}
	return s, nil
}

func newTopicCreateCmd(f *adminFlags) *cobra.Command {
	t := &topicFlags{}
	cmd := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a topic on every broker master of the cluster",
		Long: `Create a topic on every broker master of the cluster (UPDATE_AND_CREATE_TOPIC)
and wait, up to --timeout, until the name server routes it. It fails when
the topic exists already; change an existing topic with "topic update".

The message type becomes the topic attribute message.type (RocketMQ 5):
a FIFO topic takes only FIFO messages, and so on; MIXED and no type take
every kind.`,
		Example: `  karman admin topic create orders --queues 16 --type FIFO`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := t.spec(cmd, args[0], true)
			if err != nil {
				return err
			}
			return f.run(cmd, func(c *admin.Client) (any, error) {
				ch, err := c.CreateTopic(cmd.Context(), spec)
				if err == nil && !ch.Routed {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: the name server does not route %s yet; clients may not find it for a while\n", spec.Name)
				}
				return ch, err
			}, func(w io.Writer, v any) {
				ch := v.(*admin.TopicChange)
				desc := fmt.Sprintf("%d queues", spec.Queues)
				if spec.Type != "" {
					desc += ", " + spec.Type
				}
				fmt.Fprintf(w, "created topic %s (%s) on %s\n", ch.Topic, desc, brokerNames(ch.Brokers))
			})
		},
	}
	fs := sortedFlags(cmd.Flags())
	t.bind(fs, true)
	fs.StringVar(&t.cluster, "cluster", "", "cluster to create the topic in (default: the only cluster)")
	return cmd
}

func newTopicUpdateCmd(f *adminFlags) *cobra.Command {
	t := &topicFlags{}
	cmd := &cobra.Command{
		Use:   "update NAME",
		Short: "Change the queue count, type or permission of a topic",
		Long: `Change a topic on every broker master that has it (UPDATE_AND_CREATE_TOPIC).
Only the settings given change.`,
		Example: `  karman admin topic update orders --queues 32
  karman admin topic update orders --perm r`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := t.spec(cmd, args[0], false)
			if err != nil {
				return err
			}
			return f.run(cmd, func(c *admin.Client) (any, error) {
				ch, err := c.UpdateTopic(cmd.Context(), spec)
				if err == nil && !ch.Routed {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: the name server does not route the change of %s yet\n", spec.Name)
				}
				return ch, err
			}, func(w io.Writer, v any) {
				ch := v.(*admin.TopicChange)
				fmt.Fprintf(w, "updated topic %s on %s\n", ch.Topic, brokerNames(ch.Brokers))
			})
		},
	}
	t.bind(sortedFlags(cmd.Flags()), false)
	return cmd
}

// topicList is the JSON document of topic list.
type topicList struct {
	Topics []admin.TopicSummary `json:"topics"`
}

func newTopicListCmd(f *adminFlags) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the topics the name server knows",
		Long: `List the topics the name server knows (GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
with their type and queue counts from the brokers. System topics (RocketMQ's
own, retry %RETRY%..., dead-letter %DLQ%...) are left out unless --all.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(c *admin.Client) (any, error) {
				ts, err := c.ListTopics(cmd.Context(), all)
				return &topicList{Topics: ts}, err
			}, func(w io.Writer, v any) {
				row(w, "TOPIC", "TYPE", "READ", "WRITE", "BROKERS")
				for _, t := range v.(*topicList).Topics {
					row(w, t.Topic, orDash(t.Type), t.ReadQueues, t.WriteQueues, joinOrDash(t.Brokers))
				}
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "include system, retry and dead-letter topics")
	return cmd
}

func newTopicDescribeCmd(f *adminFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "describe NAME",
		Short: "Show a topic's route, configuration and queue offsets",
		Long: `Show a topic's brokers and queues (GET_ROUTEINFO_BY_TOPIC), its type and
attributes, and for every queue its min offset (oldest message kept) and
max offset (next offset to write), from GET_TOPIC_STATS_INFO or
GET_MIN_OFFSET/GET_MAX_OFFSET.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(c *admin.Client) (any, error) {
				return c.DescribeTopic(cmd.Context(), args[0])
			}, func(w io.Writer, v any) { writeTopicDescription(w, v.(*admin.TopicDescription)) })
		},
	}
}

func writeTopicDescription(w io.Writer, d *admin.TopicDescription) {
	row(w, "topic:", d.Topic)
	row(w, "type:", orDash(d.Type))
	attrs := make([]string, 0, len(d.Attributes))
	for _, k := range slices.Sorted(maps.Keys(d.Attributes)) {
		attrs = append(attrs, k+"="+d.Attributes[k])
	}
	row(w, "attributes:", orDash(strings.Join(attrs, " ")))
	row(w, "messages:", d.Messages)
	row(w, "consumed by:", orDash(strings.Join(d.ConsumerGroups, " ")))
	fmt.Fprintln(w)
	row(w, "BROKER", "CLUSTER", "ADDRESS", "READ", "WRITE", "PERM")
	for _, b := range d.Brokers {
		row(w, b.BrokerName, b.Cluster, b.Address, b.ReadQueues, b.WriteQueues, b.Perm)
	}
	fmt.Fprintln(w)
	row(w, "BROKER", "QUEUE", "MIN", "MAX", "LAST STORED")
	for _, q := range d.Queues {
		row(w, q.BrokerName, q.QueueID, q.MinOffset, q.MaxOffset, formatMillis(q.LastUpdateTimestamp))
	}
}

func newTopicDeleteCmd(f *adminFlags) *cobra.Command {
	var cluster string
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a topic from the brokers and the name servers",
		Long: `Delete a topic, its messages and the offsets kept for it from every broker
master (DELETE_TOPIC_IN_BROKER), then its route from every name server
given (DELETE_TOPIC_IN_NAMESRV).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(c *admin.Client) (any, error) {
				return c.DeleteTopic(cmd.Context(), args[0], cluster)
			}, func(w io.Writer, v any) {
				d := v.(*admin.TopicDeletion)
				fmt.Fprintf(w, "deleted topic %s from %s\n", d.Topic, brokerNames(d.Brokers))
			})
		},
	}
	cmd.Flags().StringVar(&cluster, "cluster", "", "delete only from the brokers of this cluster")
	return cmd
}
