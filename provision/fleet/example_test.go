package fleet_test

import (
	"context"
	"fmt"
	"os"

	"github.com/gpuform/gpuform/provision/fleet"
	"github.com/gpuform/gpuform/provision/ssh"
	"github.com/gpuform/gpuform/provision/transport"
)

// Probe many hosts at once: each host's failure is its own result, and the
// progress view suits stderr whether or not it is a terminal.
func ExampleRun() {
	hosts := []string{"gpu-01", "gpu-02", "gpu-03"}
	results := fleet.Run(context.Background(), hosts, fleet.DefaultParallelism,
		func(ctx context.Context, host string) error {
			c, err := ssh.Dial(ctx, host, ssh.Options{})
			if err != nil {
				return err
			}
			defer c.Close()
			_, err = c.Run(ctx, transport.Command{Script: "uname -r"})
			return err
		},
		fleet.NewProgress(os.Stderr, "probing"))
	for _, h := range hosts {
		if err := results[h]; err != nil {
			fmt.Println(err)
		}
	}
}
