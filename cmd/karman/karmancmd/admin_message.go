package karmancmd

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/karmanmq/karman/cmd/karman/internal/admin"
	"github.com/karmanmq/karman/cmd/karman/internal/progress"
	"github.com/spf13/cobra"
)

func newAdminMessageCmd(f *adminFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "message",
		Short: "Send test messages, browse queues, look messages up by id or key; have a consumer consume one now",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newMessageGetCmd(f), newMessageQueryCmd(f), newMessageConsumeCmd(f), newMessageSendCmd(f), newMessageBrowseCmd(f))
	return cmd
}

func newMessageGetCmd(f *adminFlags) *cobra.Command {
	var topic string
	cmd := &cobra.Command{
		Use:   "get ID",
		Short: "Show one message by its id",
		Long: `Show one message, its properties and its body.

ID is an offset message id (the msgId of a send result: the store host
and commit-log offset, looked up with VIEW_MESSAGE_BY_ID) or a client
message id (the UNIQ_KEY producers set, looked up with QUERY_MESSAGE),
which needs --topic. A body that is not UTF-8 is shown in base64.`,
		Example: `  karman admin message get 7F00000100002A9F0000000000001A2B
  karman admin message get C0A800050E2A18B4AAC27C6F38E40001 --topic orders`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(c *admin.Client) (any, error) {
				return c.GetMessage(cmd.Context(), args[0], topic)
			}, func(w io.Writer, v any) { writeMessage(w, v.(*admin.Message)) })
		},
	}
	cmd.Flags().StringVar(&topic, "topic", "", "the message's topic (needed for client message ids)")
	return cmd
}

func newMessageConsumeCmd(f *adminFlags) *cobra.Command {
	var topic, group, client string
	cmd := &cobra.Command{
		Use:   "consume ID --group GROUP",
		Short: "Hand one message to a consumer of a group now, and show how its listener took it",
		Long: `Hand one stored message to an online consumer of a group, out of turn
(CONSUME_MESSAGE_DIRECTLY, which the message's broker passes on to the
consumer), and show how the consumer's listener took it: CR_SUCCESS,
CR_LATER, CR_THROW_EXCEPTION, ... The group's offsets do not change.

ID is found as "message get" finds it (--topic for client message ids).
The consumer is --client, or the first of the group's consumers
connected to the message's broker.`,
		Example: `  karman admin message consume C0A800050E2A18B4AAC27C6F38E40001 --topic orders --group billing`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if group == "" {
				return errors.New("--group is required: the consumer group whose consumer takes the message")
			}
			return f.run(cmd, func(c *admin.Client) (any, error) {
				return c.ConsumeDirectly(cmd.Context(), args[0], topic, group, client)
			}, func(w io.Writer, v any) {
				d := v.(*admin.DirectConsumption)
				row(w, "consumer:", d.ClientID+" ("+d.Group+", via "+d.Broker+")")
				row(w, "result:", d.Result)
				row(w, "took:", fmt.Sprintf("%d ms", d.SpentMillis))
				if d.Remark != "" {
					row(w, "remark:", d.Remark)
				}
			})
		},
	}
	cmd.Flags().StringVar(&topic, "topic", "", "the message's topic (needed for client message ids)")
	cmd.Flags().StringVar(&group, "group", "", "the consumer group (required)")
	cmd.Flags().StringVar(&client, "client", "", "the consumer's client id (default: the first of the group's consumers)")
	return cmd
}

func writeMessage(w io.Writer, m *admin.Message) {
	row(w, "msgId:", m.MsgID)
	row(w, "offsetMsgId:", m.OffsetMsgID)
	row(w, "topic:", m.Topic)
	row(w, "broker:", m.BrokerName)
	row(w, "queue:", m.QueueID)
	row(w, "queue offset:", m.QueueOffset)
	row(w, "commit-log offset:", m.CommitLogOffset)
	row(w, "tags:", orDash(m.Tags))
	row(w, "keys:", orDash(strings.Join(m.Keys, " ")))
	row(w, "born:", formatMillis(m.BornTimestamp)+" from "+orDash(m.BornHost))
	row(w, "stored:", formatMillis(m.StoreTimestamp)+" on "+orDash(m.StoreHost))
	row(w, "reconsume times:", m.ReconsumeTimes)
	row(w, "sysFlag, flag:", fmt.Sprintf("%#x, %d", m.SysFlag, m.Flag))
	for _, k := range slices.Sorted(maps.Keys(m.Properties)) {
		row(w, "property:", k+"="+m.Properties[k])
	}
	row(w, "body:", fmt.Sprintf("%d bytes (%s)", m.BodySize, m.BodyEncoding))
	fmt.Fprintln(w)
	io.WriteString(w, m.Body)
	if !strings.HasSuffix(m.Body, "\n") {
		fmt.Fprintln(w)
	}
}

// messageList is the JSON document of message query.
type messageList struct {
	Messages []*admin.Message `json:"messages"`
}

func newMessageQueryCmd(f *adminFlags) *cobra.Command {
	var (
		begin, end string
		limit      int
	)
	cmd := &cobra.Command{
		Use:   "query TOPIC KEY",
		Short: "Find the messages of a topic by key",
		Long: `List the messages of a topic whose keys (the KEYS property) include KEY,
oldest first (QUERY_MESSAGE on every broker of the topic).

--begin and --end bound the store time and take the same forms as
offset reset's --to-time: now, -1h, unix milliseconds or RFC 3339.`,
		Example: `  karman admin message query orders order-42 --begin -24h`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := admin.MessageQuery{Topic: args[0], Key: args[1], Max: limit}
			var err error
			if q.Begin, q.End, err = parseStoreTimes(begin, end, limit); err != nil {
				return err
			}
			return f.run(cmd, func(c *admin.Client) (any, error) {
				ms, err := c.QueryMessages(cmd.Context(), q)
				return &messageList{Messages: ms}, err
			}, func(w io.Writer, v any) {
				row(w, "MSGID", "BROKER", "QUEUE", "OFFSET", "STORED", "TAGS", "KEYS", "SIZE")
				for _, m := range v.(*messageList).Messages {
					row(w, m.MsgID, m.BrokerName, m.QueueID, m.QueueOffset, formatMillis(m.StoreTimestamp), orDash(m.Tags), orDash(strings.Join(m.Keys, " ")), m.BodySize)
				}
			})
		},
	}
	fs := sortedFlags(cmd.Flags())
	fs.StringVar(&begin, "begin", "", "earliest store time (default: the beginning)")
	fs.StringVar(&end, "end", "", "latest store time (default: now)")
	fs.IntVar(&limit, "max", admin.DefaultQueryMax, "most messages to show")
	return cmd
}

func newAdminDLQCmd(f *adminFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "Handle consumer groups' dead letters",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newDLQListCmd(f), newDLQResendCmd(f))
	return cmd
}

// deadLetterRange holds the flags that choose dead letters by the time
// they were stored.
type deadLetterRange struct {
	begin, end string
	max        int
}

func (r *deadLetterRange) addFlags(cmd *cobra.Command, what string) {
	fs := sortedFlags(cmd.Flags())
	fs.StringVar(&r.begin, "begin", "", "earliest time a dead letter was stored (default: the beginning)")
	fs.StringVar(&r.end, "end", "", "latest time a dead letter was stored (default: now)")
	fs.IntVar(&r.max, "max", admin.DefaultDeadLetterMax, "most dead letters to "+what)
}

// set reports whether --begin or --end was given.
func (r *deadLetterRange) set() bool { return r.begin != "" || r.end != "" }

func (r *deadLetterRange) query(group string) (admin.DeadLetterQuery, error) {
	q := admin.DeadLetterQuery{Group: group, Max: r.max}
	var err error
	q.Begin, q.End, err = parseStoreTimes(r.begin, r.end, r.max)
	return q, err
}

// parseStoreTimes reads the --begin and --end of a query by store time
// (empty: unbounded) and checks its --max.
func parseStoreTimes(begin, end string, max int) (b, e time.Time, err error) {
	now := time.Now()
	if begin != "" {
		if b, err = admin.ParseTime(begin, now); err != nil {
			return b, e, fmt.Errorf("--begin: %w", err)
		}
	}
	if end != "" {
		if e, err = admin.ParseTime(end, now); err != nil {
			return b, e, fmt.Errorf("--end: %w", err)
		}
	}
	if max < 1 {
		return b, e, fmt.Errorf("--max %d: want at least 1", max)
	}
	return b, e, nil
}

// deadLetterList is the JSON document of dlq list.
type deadLetterList struct {
	Group       string             `json:"group"`
	DeadLetters []admin.DeadLetter `json:"deadLetters"`
}

func newDLQListCmd(f *adminFlags) *cobra.Command {
	var r deadLetterRange
	cmd := &cobra.Command{
		Use:   "list GROUP",
		Short: "List a consumer group's dead letters",
		Long: `List the messages of a consumer group's dead-letter topic (%DLQ%<group>),
oldest first, with the topic each came from. They are read with
PULL_MESSAGE as the tools group (TOOLS_CONSUMER); nothing is committed and
the group's consumers are not disturbed.

--begin and --end bound the time a message was dead-lettered and take the
same forms as offset reset's --to-time: now, -1h, unix milliseconds or
RFC 3339.`,
		Example: `  karman admin dlq list billing
  karman admin dlq list billing --begin -24h --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := r.query(args[0])
			if err != nil {
				return err
			}
			return f.run(cmd, func(c *admin.Client) (any, error) {
				dls, err := c.DeadLetters(cmd.Context(), q)
				return &deadLetterList{Group: q.Group, DeadLetters: dls}, err
			}, func(w io.Writer, v any) {
				row(w, "MSGID", "FROM TOPIC", "DEAD-LETTERED", "RECONSUMES", "TAGS", "KEYS", "SIZE", "OFFSET MSGID")
				for _, d := range v.(*deadLetterList).DeadLetters {
					row(w, d.MsgID, orDash(d.OriginTopic), formatMillis(d.StoreTimestamp), d.ReconsumeTimes, orDash(d.Tags),
						orDash(strings.Join(d.Keys, " ")), d.BodySize, d.OffsetMsgID)
				}
			})
		},
	}
	r.addFlags(cmd, "list")
	return cmd
}

func newDLQResendCmd(f *adminFlags) *cobra.Command {
	var (
		r   deadLetterRange
		all bool
	)
	cmd := &cobra.Command{
		Use:   "resend GROUP [MSGID...]",
		Short: "Put dead letters back on the topics they came from",
		Long: `Put messages of a consumer group's dead-letter topic (%DLQ%<group>) back on
the topics they came from, each as a new message with the same message id,
keys and properties; the group's consumers get them again with a fresh count
of attempts. The dead letters stay in the dead-letter topic, so resending
the same ones again puts them back again.

Name the dead letters by client message id or offset message id (see dlq
list), or choose them by the time they were stored with --all, --begin and
--end (the forms of offset reset's --to-time). With one MSGID the result is
one object; otherwise a report of what was resent and what failed, and the
exit status is 1 if any failed. A bar on standard error shows the progress
when it is a terminal.

Karman brokers put a dead letter back themselves (request
KARMAN_RESEND_DEAD_LETTER, 30000). With brokers that lack it, admin reads
the dead letter and sends the copy itself (SEND_MESSAGE).`,
		Example: `  karman admin dlq resend billing C0A800050E2A18B4AAC27C6F38E40001
  karman admin dlq resend billing --all
  karman admin dlq resend billing --begin -2h --end -1h`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			group, ids := args[0], args[1:]
			selecting := all || r.set()
			switch {
			case len(ids) > 0 && selecting:
				return fmt.Errorf("give message ids or --all/--begin/--end, not both")
			case len(ids) == 0 && !selecting:
				return fmt.Errorf("which dead letters? give their message ids (see dlq list), or --all, or --begin/--end")
			case len(ids) == 1:
				return f.run(cmd, func(c *admin.Client) (any, error) {
					return c.ResendDeadLetter(cmd.Context(), group, ids[0])
				}, func(w io.Writer, v any) {
					res := v.(*admin.Resend)
					fmt.Fprintf(w, "resent dead letter %s of group %s to topic %s: broker %s, queue %d, offset %d, offsetMsgId %s\n",
						res.DeadLetterID, res.Group, res.Topic, res.BrokerName, res.QueueID, res.QueueOffset, res.OffsetMsgID)
				})
			}
			q, err := r.query(group)
			if err != nil {
				return err
			}
			var report *admin.ResendReport
			err = f.run(cmd, func(c *admin.Client) (any, error) {
				if selecting {
					dls, err := c.DeadLetters(cmd.Context(), q)
					if err != nil {
						return nil, err
					}
					for _, d := range dls {
						ids = append(ids, d.OffsetMsgID) // exact, where a client id may name several
					}
				}
				bar := progress.New(cmd.ErrOrStderr(), len(ids), "resending dead letters", false)
				defer bar.Finish()
				report, err = c.ResendDeadLetters(cmd.Context(), group, ids, bar.Add)
				return report, err
			}, writeResendReport)
			if err == nil && len(report.Failed) > 0 {
				err = fmt.Errorf("%d of %d dead letters of group %s could not be resent", len(report.Failed), len(ids), group)
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "resend every dead letter of the group (within --begin/--end and --max)")
	r.addFlags(cmd, "resend with --all, --begin or --end")
	return cmd
}

func writeResendReport(w io.Writer, v any) {
	r := v.(*admin.ResendReport)
	if len(r.Resent)+len(r.Failed) == 0 {
		fmt.Fprintf(w, "no dead letters of group %s to resend\n", r.Group)
		return
	}
	row(w, "DEAD LETTER", "TOPIC", "BROKER", "QUEUE", "OFFSET", "RESULT")
	for _, res := range r.Resent {
		row(w, res.DeadLetterID, res.Topic, res.BrokerName, res.QueueID, res.QueueOffset, "resent as "+res.OffsetMsgID)
	}
	for _, fl := range r.Failed {
		row(w, fl.DeadLetterID, "-", "-", "-", "-", "failed: "+fl.Error)
	}
	fmt.Fprintf(w, "\nresent %d of %d dead letters of group %s\n", len(r.Resent), len(r.Resent)+len(r.Failed), r.Group)
}
