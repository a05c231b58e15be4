package cli

import (
	"fmt"
	"io"
	"strconv"

	"github.com/karmanmq/karman/cmd/karman/internal/admin"
	"github.com/spf13/cobra"
)

func newAdminClusterCmd(f *adminFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Show the clusters and brokers the name server knows",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List every broker: cluster, name, id (0 = master), address and what it reports of itself",
		Long: `List every broker the name servers know: cluster, broker name, id (0 is
the master) and address, and what each says of itself in
GET_BROKER_RUNTIME_INFO: version, messages stored (IN) and pulled (OUT)
per second over the last 10 seconds and since midnight, and how full
the disk holding its commit log is. A broker that does not answer shows
"-" and its error goes to standard error.`,
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
	return cmd
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
	row(w, "CLUSTER", "BROKER", "ID", "ADDRESS", "VERSION", "IN TPS", "OUT TPS", "IN TODAY", "OUT TODAY", "DISK")
	for _, b := range v.(*brokerList).Brokers {
		s := b.Status
		if s == nil {
			row(w, b.Cluster, b.Name, b.ID, b.Addr, "-", "-", "-", "-", "-", "-")
			continue
		}
		row(w, b.Cluster, b.Name, b.ID, b.Addr, s.Version,
			strconv.FormatFloat(s.InTPS, 'f', 1, 64), strconv.FormatFloat(s.OutTPS, 'f', 1, 64),
			s.InToday, s.OutToday, fmt.Sprintf("%.1f%%", s.DiskRatio*100))
	}
}
