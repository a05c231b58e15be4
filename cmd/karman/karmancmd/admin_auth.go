package karmancmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/karmanmq/karman/cmd/karman/internal/admin"
	"github.com/karmanmq/karman/engine/acl"
	"github.com/spf13/cobra"
)

func newAdminUserCmd(f *adminFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Manage the users of a server with --auth",
		Long: `Manage the users of the access-control list of servers started with
--auth (RocketMQ 5.3's AUTH_* requests, sent to every broker master). A
user's name is its access key (RocketMQ clients) and MQTT username; its
secret signs its requests and is its MQTT password. A Super user may do
everything, a Normal one what its policies allow (karman admin acl).
Secrets are never shown.

The first super user comes from karman serve --auth-init-user, or from
"user create --data DIR" run on the server's machine while it is stopped,
which writes it straight into the data directory.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var secret, typ, status, data, filter string
	create := &cobra.Command{
		Use:   "create NAME --secret S [--type normal|super]",
		Short: "Create a user",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if data != "" {
				return createUserOffline(cmd.OutOrStdout(), data, args[0], secret, typ)
			}
			return f.run(cmd, func(c *admin.Client) (any, error) {
				t, err := acl.ParseUserType(typ)
				if err != nil {
					return nil, err
				}
				return c.CreateUser(cmd.Context(), args[0], secret, string(t))
			}, writeAuthChange)
		},
	}
	create.Flags().StringVar(&secret, "secret", "", "the user's secret key (6 to 256 bytes)")
	create.Flags().StringVar(&typ, "type", "normal", "normal or super")
	create.Flags().StringVar(&data, "data", "", "write the user into this data directory instead, while the server is stopped (the way to the first super user)")
	create.MarkFlagRequired("secret")

	update := &cobra.Command{
		Use:   "update NAME [--secret S] [--type normal|super] [--status enable|disable]",
		Short: "Change a user's secret, type or status",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(c *admin.Client) (any, error) {
				var t acl.UserType
				var st acl.UserStatus
				var err error
				if typ != "" {
					if t, err = acl.ParseUserType(typ); err != nil {
						return nil, err
					}
				}
				if status != "" {
					if st, err = acl.ParseUserStatus(status); err != nil {
						return nil, err
					}
				}
				return c.UpdateUser(cmd.Context(), args[0], secret, string(t), string(st))
			}, writeAuthChange)
		},
	}
	update.Flags().StringVar(&secret, "secret", "", "a new secret key")
	update.Flags().StringVar(&typ, "type", "", "normal or super")
	update.Flags().StringVar(&status, "status", "", "enable or disable")

	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a user and its policies",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(c *admin.Client) (any, error) {
				return c.DeleteUser(cmd.Context(), args[0])
			}, writeAuthChange)
		},
	}
	get := &cobra.Command{
		Use:   "get NAME",
		Short: "Show a user",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(c *admin.Client) (any, error) {
				return c.GetUser(cmd.Context(), args[0])
			}, func(w io.Writer, v any) {
				writeUsers(w, []admin.User{*v.(*admin.User)})
			})
		},
	}
	list := &cobra.Command{
		Use:   "list [--filter TEXT]",
		Short: "List the users (whose names contain --filter)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(c *admin.Client) (any, error) {
				us, err := c.ListUsers(cmd.Context(), filter)
				return &userList{Users: us}, err
			}, func(w io.Writer, v any) { writeUsers(w, v.(*userList).Users) })
		},
	}
	list.Flags().StringVar(&filter, "filter", "", "only users whose names contain this")
	cmd.AddCommand(create, update, del, get, list)
	return cmd
}

type userList struct {
	Users []admin.User `json:"users"`
}

func writeUsers(w io.Writer, us []admin.User) {
	row(w, "NAME", "TYPE", "STATUS")
	for _, u := range us {
		row(w, u.Name, u.Type, u.Status)
	}
}

func writeAuthChange(w io.Writer, v any) {
	row(w, "BROKER", "ADDRESS")
	for _, b := range v.(*admin.AuthChange).Brokers {
		row(w, b.Name, b.Addr)
	}
}

// createUserOffline writes a user into the data directory of a stopped
// server.
func createUserOffline(out io.Writer, data, name, secret, typ string) error {
	t, err := acl.ParseUserType(typ)
	if err != nil {
		return err
	}
	a, closer, err := acl.OpenDir(data, true)
	if err != nil {
		return fmt.Errorf("open %s (is the server still running on it?): %w", data, err)
	}
	err = a.CreateUser(acl.User{Name: name, Secret: secret, Type: t})
	if cerr := closer.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "created %s user %s in %s\n", t, name, data)
	return nil
}

func newAdminACLCmd(f *adminFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "acl",
		Short: "Manage the policies of the users of a server with --auth",
		Long: `Manage users' policies (RocketMQ ACL 2.0). An entry is a decision,
Allow or Deny, on actions (Pub, Sub, Create, Update, Delete, Get, List,
All) over resources:

  Topic:orders  Topic:orders-*  Group:billing  Group:*  Cluster:DefaultCluster
  *             (every topic, group and cluster)
  mqtt:devices/%c/#  (MQTT topics; %u the username, %c the client id)

from any address, or only from --source-ip addresses or CIDR ranges. A
Deny wins over an Allow; with no Allow an action is refused. "acl create"
of a user that has policies adds to them; an entry on a resource the
user has an entry for replaces it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	var p admin.Policy
	var actions, resource, userFilter, resourceFilter string
	put := func(use, short string, update bool) *cobra.Command {
		c := &cobra.Command{
			Use:   use + " USER --resource TYPE:NAME --actions A,B --decision Allow|Deny [--source-ip CIDR]",
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				p.Actions = strings.Split(actions, ",")
				n, err := (acl.Entry{Resource: p.Resource, Actions: p.Actions, SourceIPs: p.SourceIPs, Decision: acl.Decision(p.Decision)}).Normalize()
				if err != nil {
					return err
				}
				p = admin.Policy{Resource: n.Resource, Actions: n.Actions, SourceIPs: n.SourceIPs, Decision: string(n.Decision)}
				return f.run(cmd, func(c *admin.Client) (any, error) {
					if update {
						return c.UpdateACL(cmd.Context(), args[0], p)
					}
					return c.CreateACL(cmd.Context(), args[0], p)
				}, writeAuthChange)
			},
		}
		c.Flags().StringVar(&p.Resource, "resource", "", "Topic:NAME, Group:NAME, Cluster:NAME (NAME literal, PREFIX* or *), * or mqtt:FILTER")
		c.Flags().StringVar(&actions, "actions", "", "comma-separated: Pub, Sub, Create, Update, Delete, Get, List or All")
		c.Flags().StringVar(&p.Decision, "decision", "Allow", "Allow or Deny")
		c.Flags().StringSliceVar(&p.SourceIPs, "source-ip", nil, "only from these addresses or CIDR ranges (repeatable, or comma-separated)")
		c.MarkFlagRequired("resource")
		c.MarkFlagRequired("actions")
		return c
	}
	del := &cobra.Command{
		Use:   "delete USER [--resource TYPE:NAME]",
		Short: "Delete a user's entries on a resource, or all its entries",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(c *admin.Client) (any, error) {
				return c.DeleteACL(cmd.Context(), args[0], resource)
			}, writeAuthChange)
		},
	}
	del.Flags().StringVar(&resource, "resource", "", "the resource pattern of the entries to delete, as given when created; empty: all")
	get := &cobra.Command{
		Use:   "get USER",
		Short: "Show a user's policies",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(c *admin.Client) (any, error) {
				return c.GetACL(cmd.Context(), args[0])
			}, func(w io.Writer, v any) { writeACLs(w, []admin.UserACL{*v.(*admin.UserACL)}) })
		},
	}
	list := &cobra.Command{
		Use:   "list [--user TEXT] [--resource TEXT]",
		Short: "List the policies of every user (filtered by user name and resource)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(c *admin.Client) (any, error) {
				as, err := c.ListACLs(cmd.Context(), userFilter, resourceFilter)
				return &aclList{ACLs: as}, err
			}, func(w io.Writer, v any) { writeACLs(w, v.(*aclList).ACLs) })
		},
	}
	list.Flags().StringVar(&userFilter, "user", "", "only users whose names contain this")
	list.Flags().StringVar(&resourceFilter, "resource", "", "only entries whose resources contain this")
	cmd.AddCommand(put("create", "Add a policy entry to a user", false), put("update", "Replace a user's entry on a resource (or add it)", true), del, get, list)
	return cmd
}

type aclList struct {
	ACLs []admin.UserACL `json:"acls"`
}

func writeACLs(w io.Writer, as []admin.UserACL) {
	row(w, "USER", "RESOURCE", "ACTIONS", "DECISION", "SOURCE")
	for _, a := range as {
		for _, p := range a.Policies {
			row(w, a.User, p.Resource, strings.Join(p.Actions, ","), p.Decision, joinOrDash(p.SourceIPs))
		}
	}
}
