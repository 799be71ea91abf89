// Command testagent stands in for `gpuform agent nvml --json` in verify's
// end-to-end tests, so they can copy a real agent binary to a node over
// sshd without depending on the CLI's wiring. It takes the same arguments
// the controller passes (agent nvml --json) plus --mock NAME and
// --fault KIND:GPU, and calls nvmlfacts.RunAgent like the CLI does.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "testagent:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 3 || args[0] != "agent" || args[1] != "nvml" || args[2] != "--json" {
		return fmt.Errorf("usage: testagent agent nvml --json [--mock NAME] [--fault KIND:GPU]...")
	}
	var opts nvmlfacts.AgentOptions
	for i := 3; i < len(args); i++ {
		if i+1 >= len(args) {
			return fmt.Errorf("%s needs a value", args[i])
		}
		switch args[i] {
		case "--mock":
			opts.Mock = args[i+1]
		case "--fault":
			f, err := nvmlfacts.ParseFault(args[i+1])
			if err != nil {
				return err
			}
			opts.Faults = append(opts.Faults, f)
		default:
			return fmt.Errorf("unknown flag %s", args[i])
		}
		i++
	}
	return nvmlfacts.RunAgent(context.Background(), os.Stdout, opts)
}
