// Command testagent stands in for `gpuform agent nvml --json` in verify's
// end-to-end tests, so they can copy a real agent binary to a node over
// sshd without depending on the CLI's wiring. It parses its arguments with
// nvmlfacts.ParseAgentFlags and calls nvmlfacts.RunAgent, as the CLI does.
package main

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "testagent:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	cmd := nvmlfacts.AgentCommand()
	if len(args) < len(cmd) || !slices.Equal(args[:len(cmd)], cmd) {
		return fmt.Errorf("usage: testagent agent nvml --json [flags]")
	}
	opts, err := nvmlfacts.ParseAgentFlags(args[len(cmd):])
	if err != nil {
		return err
	}
	return nvmlfacts.RunAgent(context.Background(), os.Stdout, opts)
}
