package main

import "github.com/spf13/cobra"

// registrySubcommands are the subcommands of etdi registry, each added by
// the file that defines it (registry_audit.go, registry_serve.go).
var registrySubcommands []func(*env) *cobra.Command

func (e *env) registryCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "registry",
		Short: "Audit an MCP Registry, or serve from it only what verifies and is approved",
		Long: `Organisations read MCP servers from a registry (the official one, or their
own). etdi registry audit walks every entry of one and reports whether
each is signed, verifies, is bound to its packages and remotes, and is
approved; etdi registry serve stands between a registry and the hosts and
lists only the entries that verify and are approved (docs/registry.md).`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	for _, sub := range registrySubcommands {
		cmd.AddCommand(sub(e))
	}
	return cmd
}
