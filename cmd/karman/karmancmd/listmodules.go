package karmancmd

import (
	"encoding/json"
	"fmt"
	"runtime/debug"

	"github.com/karmanmq/karman/server"
	"github.com/spf13/cobra"
)

// moduleEntry is one line of list-modules.
type moduleEntry struct {
	ID string `json:"id"`
	// Package is the Go package that registers the module.
	Package string `json:"package"`
	// Module and Version are the Go module holding Package and its
	// version in this build ("(devel)" for the main module and modules
	// built from a work tree).
	Module  string `json:"module"`
	Version string `json:"version"`
}

func newListModulesCmd(reg *server.Registry) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list-modules",
		Short: "List the modules compiled into this binary, with their versions",
		Long: `List the server modules compiled into this binary, sorted by id, one per
line: the id, the version of the Go module that provides it, and its Go
package. "(devel)" is the version of the main module and of modules built
from a source tree.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi, _ := debug.ReadBuildInfo()
			entries := listModules(reg, bi)
			w := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				return enc.Encode(entries)
			}
			for _, e := range entries {
				if _, err := fmt.Fprintf(w, "%s %s %s\n", e.ID, e.Version, e.Package); err != nil {
					return err
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of {id, package, module, version}")
	return cmd
}

// listModules returns the modules of reg, sorted by id, with the Go module
// of bi that provides each one's package.
func listModules(reg *server.Registry, bi *debug.BuildInfo) []moduleEntry {
	entries := []moduleEntry{}
	for _, mi := range reg.Modules() {
		b := server.BuildOf(mi.New(), bi)
		entries = append(entries, moduleEntry{ID: string(mi.ID), Package: b.Package, Module: b.Module, Version: b.Version})
	}
	return entries
}
