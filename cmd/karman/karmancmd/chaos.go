package karmancmd

import (
	"github.com/spf13/cobra"
)

// newChaosCmd returns "chaos", which runs "karman-bench chaos" with the
// same arguments in place of this process, telling it to start this
// karman binary for the cluster. The harness is in karman-bench because
// it drives the cluster with the RocketMQ Go client, which the server
// binary does not link.
func newChaosCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "chaos --fault F [flags]",
		Short: "Inject a fault into a local Karman cluster under load and check what was lost",
		Long: `Inject a fault into a local Karman cluster under load and check what was
lost: kill-master, kill-replica, kill-controller-leader, pause-master,
partition-master or truncate-replica, with sync or async replication.

Run by the ` + benchProgram + ` program with the same arguments, standard
streams and exit status; the cluster runs this karman binary (--karman
overrides it). karman looks for ` + benchProgram + ` beside its own
executable, then on the PATH. "karman chaos --help" lists the flags.`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := findBenchProgram()
			if err != nil {
				return err
			}
			argv := []string{cmd.Root().CommandPath(), "chaos"}
			if exe, err := executable(); err == nil {
				// A --karman among args comes later and wins.
				argv = append(argv, "--karman", exe)
			}
			return execBench(path, append(argv, args...))
		},
	}
}
