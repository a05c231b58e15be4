package cli

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/karmanmq/karman/cmd/karman/internal/admin"
	"github.com/spf13/cobra"
)

func newAdminMessageCmd(f *adminFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "message",
		Short: "Look messages up by id or key",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newMessageGetCmd(f), newMessageQueryCmd(f))
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
			now := time.Now()
			var err error
			if begin != "" {
				if q.Begin, err = admin.ParseTime(begin, now); err != nil {
					return fmt.Errorf("--begin: %w", err)
				}
			}
			if end != "" {
				if q.End, err = admin.ParseTime(end, now); err != nil {
					return fmt.Errorf("--end: %w", err)
				}
			}
			if limit < 1 {
				return fmt.Errorf("--max %d: want at least 1", limit)
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
	cmd.AddCommand(&cobra.Command{
		Use:   "resend GROUP MSGID",
		Short: "Put a dead letter back on the topic it came from",
		Long: `Put a message of a consumer group's dead-letter topic (%DLQ%<group>) back
on the topic it came from, as a new message with the same message id, keys
and properties; the group's consumers get it again with a fresh count of
attempts. MSGID is the dead letter's client message id or offset message id.

Karman brokers do it themselves (request KARMAN_RESEND_DEAD_LETTER, 30000).
With brokers that lack it, admin reads the dead letter and sends the copy
itself (SEND_MESSAGE).`,
		Example: `  karman admin dlq resend billing C0A800050E2A18B4AAC27C6F38E40001`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(c *admin.Client) (any, error) {
				return c.ResendDeadLetter(cmd.Context(), args[0], args[1])
			}, func(w io.Writer, v any) {
				r := v.(*admin.Resend)
				fmt.Fprintf(w, "resent dead letter %s of group %s to topic %s: broker %s, queue %d, offset %d, offsetMsgId %s\n",
					r.DeadLetterID, r.Group, r.Topic, r.BrokerName, r.QueueID, r.QueueOffset, r.OffsetMsgID)
			})
		},
	})
	return cmd
}
