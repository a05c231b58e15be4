package karmancmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/karmanmq/karman/cmd/karman/internal/admin"
	"github.com/spf13/cobra"
)

func newMessageSendCmd(f *adminFlags) *cobra.Command {
	var (
		tag, keys, file string
		props           []string
		queue           int32
	)
	cmd := &cobra.Command{
		Use:   "send TOPIC [BODY | --file PATH]",
		Short: "Send a test message to a topic",
		Long: `Send one message to a topic (SEND_MESSAGE to a master that has it
writable, as the producer group KARMAN_ADMIN), and show where it was
stored. The body is BODY, or the contents of --file ("-" reads standard
input). The topic must exist unless the broker creates topics on first
send.`,
		Example: `  karman admin message send orders 'order 42 paid' --tag paid --keys order-42
  karman admin message send orders --file order.json --property source=cli`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o := admin.Outgoing{Topic: args[0], Tag: tag, Keys: strings.Fields(keys), Queue: queue, Properties: map[string]string{}}
			switch {
			case len(args) == 2 && file != "":
				return errors.New("give the body as an argument or with --file, not both")
			case len(args) == 2:
				o.Body = []byte(args[1])
			case file == "-":
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return fmt.Errorf("--file -: %w", err)
				}
				o.Body = b
			case file != "":
				b, err := os.ReadFile(file)
				if err != nil {
					return fmt.Errorf("--file: %w", err)
				}
				o.Body = b
			default:
				return errors.New("no body: give it as the second argument or with --file")
			}
			if len(o.Body) == 0 {
				return errors.New("the body is empty; RocketMQ refuses empty messages")
			}
			for _, p := range props {
				k, v, ok := strings.Cut(p, "=")
				if !ok || k == "" {
					return fmt.Errorf("--property %q: want key=value", p)
				}
				o.Properties[k] = v
			}
			return f.run(cmd, func(c *admin.Client) (any, error) {
				return c.SendMessage(cmd.Context(), o)
			}, func(w io.Writer, v any) {
				s := v.(*admin.Sent)
				fmt.Fprintf(w, "sent to %s: broker %s, queue %d, offset %d\nmsgId %s, offsetMsgId %s\n",
					s.Topic, s.BrokerName, s.QueueID, s.QueueOffset, s.MsgID, s.OffsetMsgID)
			})
		},
	}
	fs := sortedFlags(cmd.Flags())
	fs.StringVar(&tag, "tag", "", "the message's tag")
	fs.StringVar(&keys, "keys", "", "the message's keys, separated by spaces")
	fs.StringArrayVar(&props, "property", nil, "a user property key=value (repeatable)")
	fs.StringVar(&file, "file", "", `read the body from this file ("-": standard input)`)
	fs.Int32Var(&queue, "queue", -1, "the queue to send to (default: one chosen by the message id)")
	return cmd
}

func newMessageBrowseCmd(f *adminFlags) *cobra.Command {
	q := admin.BrowseQuery{}
	cmd := &cobra.Command{
		Use:   "browse TOPIC --queue N [--from OFFSET] [--count N]",
		Short: "Read the messages of one queue from an offset",
		Long: `Read the messages of one queue of a topic from an offset, without a filter,
as the tools group (PULL_MESSAGE as TOOLS_CONSUMER): nothing is committed
and no consumer is disturbed. An offset below the queue's minimum starts at
the minimum. The output ends with the offset to browse from next.`,
		Example: `  karman admin message browse orders --queue 0 --from 100 --count 10
  karman admin message browse orders --queue 3 --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("queue") {
				return errors.New("--queue is required: the queue to read (see topic describe)")
			}
			q.Topic = args[0]
			if q.Count < 1 {
				return fmt.Errorf("--count %d: want at least 1", q.Count)
			}
			return f.run(cmd, func(c *admin.Client) (any, error) {
				return c.Browse(cmd.Context(), q)
			}, func(w io.Writer, v any) {
				b := v.(*admin.Browsed)
				row(w, "OFFSET", "MSGID", "STORED", "TAGS", "KEYS", "SIZE", "BODY")
				for _, m := range b.Messages {
					row(w, m.QueueOffset, m.MsgID, formatMillis(m.StoreTimestamp), orDash(m.Tags), orDash(strings.Join(m.Keys, " ")), m.BodySize, preview(m))
				}
				fmt.Fprintf(w, "\n%s queue %d on %s holds offsets %d to %d; next: --from %d\n", b.Topic, b.QueueID, b.BrokerName, b.MinOffset, b.MaxOffset, b.NextOffset)
			})
		},
	}
	fs := sortedFlags(cmd.Flags())
	fs.Int32Var(&q.Queue, "queue", 0, "the queue id (required)")
	fs.Int64Var(&q.From, "from", 0, "the first queue offset to read")
	fs.IntVar(&q.Count, "count", admin.DefaultBrowseCount, "most messages to show")
	fs.StringVar(&q.Broker, "broker", "", "the broker, when the topic is on several (default: the first)")
	return cmd
}

// preview is the start of a message's body on one line.
func preview(m *admin.Message) string {
	if m.BodyEncoding != admin.BodyUTF8 {
		return "(binary)"
	}
	s := strings.Join(strings.Fields(m.Body), " ")
	if r := []rune(s); len(r) > 40 {
		s = string(r[:40]) + "…"
	}
	return orDash(s)
}
