package karmancmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// suggestDistance is how many edits a mistyped command or flag name may be
// from a real one to be suggested.
const suggestDistance = 2

// suggestCommands makes every command with subcommands answer an unknown
// subcommand with the ones it may have meant ("karman admin topic lst":
// did you mean list?). Cobra suggests only for the root's children.
func suggestCommands(root *cobra.Command) {
	root.SuggestionsMinimumDistance = suggestDistance
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.HasSubCommands() && c != root {
			c.SuggestionsMinimumDistance = suggestDistance
			c.Args = unknownSubcommand
			if !c.Runnable() {
				c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// unknownSubcommand refuses arguments to a command that only groups
// others, suggesting the subcommands the first argument resembles.
func unknownSubcommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return fmt.Errorf("%s\nRun '%s --help' for usage.", msg, c.CommandPath())
}

// flagSuggestions returns the flags of c a mistyped flag name in err may
// have meant, as "--name" strings; nil when err is not about an unknown
// flag or nothing is close.
func flagSuggestions(c *cobra.Command, err error) []string {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return nil
	}
	name, _, _ = strings.Cut(name, " ")
	var out []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if editDistance(name, f.Name) <= suggestDistance || (len(name) > 2 && strings.HasPrefix(f.Name, name)) {
			out = append(out, "--"+f.Name)
		}
	})
	slices.Sort(out)
	return out
}

// editDistance is the Levenshtein distance between a and b, ignoring case.
func editDistance(a, b string) int {
	ra, rb := []rune(strings.ToLower(a)), []rune(strings.ToLower(b))
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
