package main

import (
	"fmt"
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/importer"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/spec"
)

func newImportCommand(s Streams) *cobra.Command {
	var conn connectFlags
	var h spec.Host
	var name, out string
	cmd := &cobra.Command{
		Use:         "import HOST",
		Annotations: graceful(),
		Short:       "Write the spec of what a node runs today",
		Long: `Import probes HOST (one SSH exec, read-only) and prints a node block whose
every value is what the node runs now: driver and its flavour, persistence
mode, fabric manager, peermem, CUDA, NCCL, DCGM, container toolkit, Docker's
default runtime, shm size and ulimits, /dev/shm, NUMA balancing, huge pages,
GPU-relevant kernel arguments and the CPU governor.

Start adopting gpuform on an existing fleet from it: "gpuform plan" of the
imported spec shows no changes on that node, and shows every other node's
drift from it.

Exit status: 0 written; 1 the host could not be probed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h.Name = args[0]
			if hosts, err := spec.ExpandHostPattern(h.Name); err != nil || len(hosts) != 1 || hosts[0] != h.Name {
				return fmt.Errorf("import takes one host name, not %q", h.Name)
			}
			if name == "" {
				name = nodeName(h.Name)
			}
			hosts := []target.Host{{Host: h}}
			if err := conn.refuseLocal(hosts, "import would run its probe on the machine gpuform runs on"); err != nil {
				return err
			}
			opts, err := conn.options(s, ".")
			if err != nil {
				return err
			}
			// import reads no spec: its simulated state is keyed by the
			// working directory, which no one else supplied.
			opts.SpecDir = ""
			probed, err := target.Probe(cmd.Context(), hosts, conn.targetOptionsFor(s, opts, false, "probing"))
			if err != nil {
				return err
			}
			if err := probed[0].Err; err != nil {
				return fmt.Errorf("%s", target.ErrorText(err))
			}
			k, err := s.KB()
			if err != nil {
				return err
			}
			src := importer.Spec(probed[0].Facts, importer.Options{Name: name, Host: h, Now: time.Now(), KB: k})
			if out == "" {
				_, err := s.Out.Write(src)
				return err
			}
			if err := createNewFile(out, src); err != nil {
				return err
			}
			fmt.Fprintf(s.Out, "Wrote %s.\n", out)
			return nil
		},
	}
	conn.register(cmd.Flags())
	conn.timeouts.registerProbe(cmd.Flags())
	cmd.Flags().StringVar(&name, "name", "", "the node block's name (default: from the host name)")
	cmd.Flags().StringVar(&out, "out", "", "write the spec to FILE (never overwritten) instead of standard output")
	cmd.Flags().StringVar(&h.User, "user", "", "SSH login user")
	cmd.Flags().IntVar(&h.Port, "port", 0, "SSH port")
	cmd.Flags().StringVar(&h.Jump, "jump", "", "ProxyJump host or chain")
	cmd.Flags().StringVar(&h.Become, "become", "", "\"sudo\" to probe with sudo -n")
	return cmd
}

var nonName = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// nodeName makes a node block name from a host: "sim://hgx-h100-stale/n1"
// → "hgx-h100-stale-n1", "gpu001.dc1.example.com" → "gpu001".
func nodeName(host string) string {
	if rest, ok := strings.CutPrefix(host, "sim://"); ok {
		host = rest
	} else if rest, ok := strings.CutPrefix(host, connect.LocalScheme); ok {
		host = rest
	} else if net.ParseIP(host) == nil {
		host, _, _ = strings.Cut(host, ".")
	}
	n := strings.Trim(nonName.ReplaceAllString(host, "-"), "-")
	if n == "" || !(n[0] >= 'a' && n[0] <= 'z' || n[0] >= 'A' && n[0] <= 'Z') {
		n = "node-" + n
	}
	return n
}
