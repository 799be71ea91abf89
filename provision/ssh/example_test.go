package ssh_test

import (
	"context"
	"fmt"
	"time"

	"github.com/gpuform/gpuform/provision/ssh"
	"github.com/gpuform/gpuform/provision/transport"
)

// Dial once per host, run every command of the run over that connection,
// close at the end. Errors are *transport.HostError values whose Op says
// what failed.
func ExampleDial() {
	ctx := context.Background()
	c, err := ssh.Dial(ctx, "gpu-01", ssh.Options{
		User:              "ubuntu",            // from the inventory; wins over ~/.ssh/config
		ProxyJump:         []string{"bastion"}, // jump hosts, nearest first
		AcceptNewHostKeys: false,               // --accept-new-host-keys
		CommandTimeout:    10 * time.Minute,
		Become:            ssh.BecomeSudo,
	})
	if err != nil {
		fmt.Println(err) // e.g. "gpu-01: host key: host key of gpu-01 is not known: …"
		return
	}
	defer c.Close()
	res, err := c.Run(ctx, transport.Command{Script: "cat /proc/driver/nvidia/version", Become: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("exit %d: %s", res.ExitCode, res.Stdout)
}
