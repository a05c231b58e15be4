package cli

import (
	"io"

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
		Short: "List every broker: cluster, broker name, id (0 = master) and address",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd, func(c *admin.Client) (any, error) {
				bs, err := c.Brokers(cmd.Context())
				if bs == nil {
					bs = []admin.Broker{}
				}
				return &brokerList{Brokers: bs}, err
			}, func(w io.Writer, v any) {
				row(w, "CLUSTER", "BROKER", "ID", "ADDRESS")
				for _, b := range v.(*brokerList).Brokers {
					row(w, b.Cluster, b.Name, b.ID, b.Addr)
				}
			})
		},
	})
	return cmd
}

// brokerList is the JSON document of cluster list.
type brokerList struct {
	Brokers []admin.Broker `json:"brokers"`
}
