package karmancmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/karmanmq/karman/cmd/karman/internal/admin"
	"github.com/spf13/cobra"
)

// namesrvEnv is the environment variable RocketMQ's tools read the name
// server addresses from; admin's --namesrv defaults to it.
const namesrvEnv = "NAMESRV_ADDR"

// defaultNamesrv is the name server admin talks to when neither
// --namesrv nor NAMESRV_ADDR says otherwise.
const defaultNamesrv = "127.0.0.1:9876"

// adminFlags are the flags every admin command shares.
type adminFlags struct {
	namesrv   string
	json      bool
	timeout   time.Duration
	accessKey string
	secretKey string
}

// Environment variables the admin and bench commands take credentials
// from when --access-key and --secret-key are not given.
const (
	accessKeyEnv = "KARMAN_ACCESS_KEY"
	secretKeyEnv = "KARMAN_SECRET_KEY"
)

func newAdminCmd() *cobra.Command {
	f := &adminFlags{}
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Manage topics, consumer groups, offsets and messages of a cluster",
		Long: `Manage a RocketMQ cluster (Karman or Java brokers) over the remoting protocol:
admin asks the name server where the brokers are, then talks to each broker
master.

Output is a table for people, or with --json a JSON document for scripts
(its field names are stable). Errors go to standard error with exit
status 1.

Against a server with --auth, every request is signed with --access-key
and --secret-key (or KARMAN_ACCESS_KEY and KARMAN_SECRET_KEY), as
RocketMQ's clients sign theirs.`,
		Example: `  karman admin cluster list
  karman admin topic create orders --queues 8 --type FIFO
  karman admin group create billing --fifo --max-attempts 5
  karman admin group describe billing --json
  karman admin offset reset billing orders --to-time -1h
  karman admin message get 7F0000010000000000000000002A1F3C
  karman admin dlq list billing --begin -24h
  karman admin dlq resend billing C0A800050E2A18B4AAC27C6F38E40001
  karman admin user create app --secret 's3cret-app' --access-key admin --secret-key 's3cret-admin'
  karman admin acl create app --resource Topic:orders --actions Pub,Sub --decision Allow
  karman admin message send orders 'hello' --tag test
  karman admin message browse orders --queue 0 --from 0
  karman admin broker config set suspendMaxTimeMills 5000
  karman admin stats --interval 10s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	def := os.Getenv(namesrvEnv)
	if def == "" {
		def = defaultNamesrv
	}
	fs := sortedFlags(cmd.PersistentFlags())
	fs.StringVar(&f.namesrv, "namesrv", def, "name server addresses, host:port separated by commas or semicolons (default from "+namesrvEnv+")")
	fs.BoolVar(&f.json, "json", false, "print JSON instead of tables")
	fs.DurationVar(&f.timeout, "timeout", admin.DefaultTimeout, "time allowed for each request to a name server or broker")
	fs.StringVar(&f.accessKey, "access-key", os.Getenv(accessKeyEnv), "sign requests as this user, for servers with --auth (default from "+accessKeyEnv+")")
	fs.StringVar(&f.secretKey, "secret-key", "", "the secret of --access-key (default from "+secretKeyEnv+")")
	cmd.AddCommand(
		newAdminClusterCmd(f),
		newAdminTopicCmd(f),
		newAdminGroupCmd(f),
		newAdminOffsetCmd(f),
		newAdminMessageCmd(f),
		newAdminDLQCmd(f),
		newAdminUserCmd(f),
		newAdminACLCmd(f),
		newAdminBrokerCmd(f),
		newAdminStatsCmd(f),
	)
	return cmd
}

// run builds a client from the shared flags, calls do with it and prints
// its result: as JSON with --json, else with text.
func (f *adminFlags) run(cmd *cobra.Command, do func(*admin.Client) (any, error), text func(w io.Writer, v any)) error {
	if f.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	addrs, err := admin.ParseAddrs(f.namesrv)
	if err != nil {
		return fmt.Errorf("--namesrv: %w", err)
	}
	secret := f.secretKey
	if secret == "" {
		secret = os.Getenv(secretKeyEnv)
	}
	if f.accessKey != "" && secret == "" {
		return fmt.Errorf("--access-key %s needs --secret-key (or %s)", f.accessKey, secretKeyEnv)
	}
	c, err := admin.New(admin.Options{NameServers: addrs, Timeout: f.timeout, AccessKey: f.accessKey, SecretKey: secret})
	if err != nil {
		return err
	}
	defer c.Close()
	v, err := do(c)
	if err != nil {
		return err
	}
	return f.print(cmd.OutOrStdout(), v, text)
}

// print writes v as indented JSON, or through text into an aligning
// tabwriter.
func (f *adminFlags) print(out io.Writer, v any, text func(w io.Writer, v any)) error {
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	tw := newTable(out)
	text(tw, v)
	return tw.Flush()
}

func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// row writes one tab-separated table row.
func row(w io.Writer, cells ...any) {
	for i, c := range cells {
		if i > 0 {
			io.WriteString(w, "\t")
		}
		fmt.Fprint(w, c)
	}
	io.WriteString(w, "\n")
}

// formatMillis writes a time in ms since the epoch for people; "-" for 0.
func formatMillis(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return time.UnixMilli(ms).Format("2006-01-02T15:04:05.000Z07:00")
}

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// joinOrDash joins s with commas, or returns "-".
func joinOrDash(s []string) string { return orDash(strings.Join(s, ",")) }

// brokerNames lists the names of brokers.
func brokerNames(bs []admin.Broker) string {
	names := make([]string, len(bs))
	for i, b := range bs {
		names[i] = b.Name
	}
	return joinOrDash(names)
}

// yesNo writes a boolean for people.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
