package main

import (
	"github.com/spf13/cobra"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// nvmlMockNames lists the simulated NVML systems, for flag help.
func nvmlMockNames() []string { return nvmlfacts.MockNames() }

// newAgentCommand is the hidden side of verify that runs on a node: the
// controller copies this binary there and runs "gpuform agent nvml --json".
func newAgentCommand(s Streams) *cobra.Command {
	agent := &cobra.Command{
		Use:    "agent",
		Short:  "Commands gpuform runs on a node (not for direct use)",
		Hidden: true,
	}
	agent.AddCommand(&cobra.Command{
		Use:                "nvml --json [--xid-window D] [--nic NAME=PCI] [--mock NAME] [--fault KIND:GPU]",
		Annotations:        graceful(),
		Short:              "Print this node's NVML facts as JSON",
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			var rest []string
			for _, a := range args {
				if a != "--json" && a != "-json" {
					rest = append(rest, a)
				}
			}
			opts, err := nvmlfacts.ParseAgentFlags(rest)
			if err != nil {
				return err
			}
			return nvmlfacts.RunAgent(cmd.Context(), s.Out, opts)
		},
	})
	return agent
}
