package karmancmd

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newCompletionCmd returns "karman completion SHELL", which writes the
// shell's completion script. (Cobra's own completion command writes to
// the output it saw when made, so a test's or a caller's SetOut would not
// reach it.)
func newCompletionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print the shell completion script",
		Long: `Print a script that completes karman's commands, flags and arguments.

  bash:        source <(karman completion bash)
               (needs the bash-completion package; to keep it, write it to
               /etc/bash_completion.d/karman)
  zsh:         karman completion zsh > "${fpath[1]}/_karman"
  fish:        karman completion fish > ~/.config/fish/completions/karman.fish
  powershell:  karman completion powershell | Out-String | Invoke-Expression`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      cobra.MatchAll(cobra.ExactArgs(1), cobra.OnlyValidArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, w := cmd.Root(), cmd.OutOrStdout()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(w, true)
			case "zsh":
				return root.GenZshCompletion(w)
			case "fish":
				return root.GenFishCompletion(w, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(w)
			}
			return fmt.Errorf("unknown shell %q", args[0])
		},
	}
}
