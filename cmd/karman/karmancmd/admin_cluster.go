package karmancmd

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/karmanmq/karman/cmd/karman/internal/admin"
	"github.com/spf13/cobra"
)

func newAdminClusterCmd(f *adminFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Show the clusters and brokers the name server knows; drain a broker of producers",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List every broker: cluster, name, id (0 = master), address, replication and what it reports of itself",
		Long: `List every broker the name servers know: cluster, broker name, id (0 is
the master) and address, and what each says of itself in
GET_BROKER_RUNTIME_INFO: its replication (ROLE, with its id in the
group; the group's master EPOCH; the IN SYNC set by id, "0" being a
master without a controller; LAG in bytes: a replica's own, or each
replica's as id:bytes on its master), version, messages stored (IN)
and pulled (OUT) per second over the last 10 seconds and since
midnight, and how full the disk holding its commit log is. A broker
that does not replicate is a master alone. A broker that does not
answer shows "-" and its error goes to standard error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(c *admin.Client) (any, error) {
				bs, err := c.Brokers(cmd.Context())
				out := &brokerList{Brokers: []brokerWithStatus{}}
				for _, b := range bs {
					s, serr := c.BrokerStatus(cmd.Context(), b)
					if serr != nil {
						fmt.Fprintf(cmd.ErrOrStderr(), "broker %s (%s): %v\n", b.Name, b.Addr, serr)
					}
					out.Brokers = append(out.Brokers, brokerWithStatus{Broker: b, Status: s})
				}
				return out, err
			}, writeBrokerList)
		},
	})
	cmd.AddCommand(newWritePermCmd(f, false), newWritePermCmd(f, true))
	return cmd
}

// newWritePermCmd is "cluster wipe-write" (writable false) or "cluster
// add-write".
func newWritePermCmd(f *adminFlags, writable bool) *cobra.Command {
	use, short, long := "wipe-write BROKER", "Stop producers from sending to a broker, which consumers go on reading",
		`Take the write permission of a broker group away in every topic it
serves, on every name server (WIPE_WRITE_PERM_OF_BROKER). Producers stop
sending to it once they refresh their routes (within 30 s) while
consumers go on reading it: the way to drain a broker before
maintenance. It lasts until "cluster add-write", or until the broker
goes away and registers again.`
	if writable {
		use, short, long = "add-write BROKER", "Let producers send to a broker again",
			`Give a broker group its write permission back in every topic, on every
name server (ADD_WRITE_PERM_OF_BROKER), after "cluster wipe-write".`
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return f.run(cmd, func(c *admin.Client) (any, error) {
				return c.SetBrokerWritable(cmd.Context(), args[0], writable)
			}, func(w io.Writer, v any) {
				ch := v.(*admin.WritePermChange)
				row(w, "NAME SERVER", "TOPICS CHANGED")
				for _, ns := range ch.NameServers {
					row(w, ns.Addr, ns.Topics)
				}
			})
		},
	}
}

// brokerList is the JSON document of cluster list.
type brokerList struct {
	Brokers []brokerWithStatus `json:"brokers"`
}

// brokerWithStatus is a broker and what it said of itself (nil when it did
// not answer).
type brokerWithStatus struct {
	admin.Broker
	Status *admin.BrokerStatus `json:"status"`
}

func writeBrokerList(w io.Writer, v any) {
	row(w, "CLUSTER", "BROKER", "ID", "ADDRESS", "ROLE", "EPOCH", "IN SYNC", "LAG", "VERSION", "IN TPS", "OUT TPS", "IN TODAY", "OUT TODAY", "DISK")
	for _, b := range v.(*brokerList).Brokers {
		s := b.Status
		if s == nil {
			row(w, b.Cluster, b.Name, b.ID, b.Addr, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-")
			continue
		}
		role, epoch, inSync, lag := replicationColumns(s.Replication)
		row(w, b.Cluster, b.Name, b.ID, b.Addr, role, epoch, inSync, lag, s.Version,
			strconv.FormatFloat(s.InTPS, 'f', 1, 64), strconv.FormatFloat(s.OutTPS, 'f', 1, 64),
			s.InToday, s.OutToday, fmt.Sprintf("%.1f%%", s.DiskRatio*100))
	}
}

// replicationColumns are the ROLE, EPOCH, IN SYNC and LAG cells of a
// broker: its role (with its id in the group when it has one), the master
// epoch, the in-sync set by id, and the lag in bytes (a replica's own,
// or each replica's as "id:bytes" on a master). A broker that does not
// replicate is a master alone: "master", "-", "-", "-".
func replicationColumns(r *admin.Replication) (role, epoch, inSync, lag string) {
	if r == nil {
		return "master", "-", "-", "-"
	}
	role, epoch, inSync, lag = r.Role, strconv.FormatInt(r.MasterEpoch, 10), "-", "-"
	if r.BrokerID != "" {
		role += "(" + r.BrokerID + ")"
	}
	if len(r.InSync) > 0 {
		inSync = strings.Join(r.InSync, ",")
	}
	switch {
	case r.LagBytes != nil:
		lag = strconv.FormatInt(*r.LagBytes, 10)
	case len(r.ReplicaLagBytes) > 0:
		var parts []string
		for _, id := range slices.Sorted(maps.Keys(r.ReplicaLagBytes)) {
			parts = append(parts, id+":"+strconv.FormatInt(r.ReplicaLagBytes[id], 10))
		}
		lag = strings.Join(parts, ",")
	}
	return role, epoch, inSync, lag
}
