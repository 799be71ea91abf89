package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/importer"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/spec"
)

// importArguments are the arguments of gpuform import.
type importArguments struct {
	// Host is the host to probe: its name and the -user, -port, -jump and
	// -become flags.
	Host spec.Host
	// Conn are the connection flags and -probe-timeout.
	Conn connectFlags
	// Name is the node block's name: -name, or made from the host name.
	Name string
	// OutPath is -out: the file the spec is written to (never
	// overwritten), "" for standard output.
	OutPath string
}

func (a *importArguments) register(fs *pflag.FlagSet) {
	a.Conn.register(fs)
	a.Conn.timeouts.registerProbe(fs)
	fs.StringVar(&a.Name, "name", "", "the node block's name (default: from the host name)")
	fs.StringVar(&a.OutPath, "out", "", "write the spec to FILE (never overwritten) instead of standard output")
	fs.StringVar(&a.Host.User, "user", "", "SSH login user")
	fs.IntVar(&a.Host.Port, "port", 0, "SSH port")
	fs.StringVar(&a.Host.Jump, "jump", "", "ProxyJump host or chain")
	fs.StringVar(&a.Host.Become, "become", "", "\"sudo\" to probe with sudo -n")
}

// finish takes the host, which must be one host name (no range), and
// makes the node block's name from it when -name is not given.
func (a *importArguments) finish(_ *pflag.FlagSet, args []string) error {
	a.Host.Name = args[0]
	if hosts, err := spec.ExpandHostPattern(a.Host.Name); err != nil || len(hosts) != 1 || hosts[0] != a.Host.Name {
		return fmt.Errorf("import takes one host name, not %q", a.Host.Name)
	}
	if a.Name == "" {
		a.Name = nodeName(a.Host.Name)
	}
	return nil
}

// parseImportArguments parses gpuform import's command line (after
// "import").
func parseImportArguments(args []string) (*importArguments, error) {
	a := &importArguments{}
	return a, parseArguments(args, a.register, cobra.ExactArgs(1), a.finish)
}

func newImportCommand(s Streams) *cobra.Command {
	a := &importArguments{}
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
			if err := a.finish(cmd.Flags(), args); err != nil {
				return err
			}
			src, err := runImport(cmd.Context(), s, a)
			if err != nil {
				return err
			}
			return importView{s}.Spec(src, a.OutPath)
		},
	}
	a.register(cmd.Flags())
	return cmd
}

// runImport is gpuform import's work: it probes the host and returns the
// spec of what it runs.
func runImport(ctx context.Context, s Streams, a *importArguments) ([]byte, error) {
	hosts := []target.Host{{Host: a.Host}}
	if err := a.Conn.refuseLocal(hosts, "import would run its probe on the machine gpuform runs on"); err != nil {
		return nil, err
	}
	opts, err := a.Conn.options(s, ".")
	if err != nil {
		return nil, err
	}
	// import reads no spec: its simulated state is keyed by the
	// working directory, which no one else supplied.
	opts.SpecDir = ""
	probed, err := target.Probe(ctx, hosts, a.Conn.targetOptionsFor(s, opts, false, "probing"))
	if err != nil {
		return nil, err
	}
	if err := probed[0].Err; err != nil {
		return nil, fmt.Errorf("%s", target.ErrorText(err))
	}
	k, err := s.KB()
	if err != nil {
		return nil, err
	}
	return importer.Spec(probed[0].Facts, importer.Options{Name: a.Name, Host: a.Host, Now: time.Now(), KB: k}), nil
}

// importView writes the imported spec.
type importView struct{ s Streams }

// Spec writes src to standard output, or to the new file out and says
// so.
func (v importView) Spec(src []byte, out string) error {
	if out == "" {
		_, err := v.s.Out.Write(src)
		return err
	}
	if err := createNewFile(out, src); err != nil {
		return err
	}
	fmt.Fprintf(v.s.Out, "Wrote %s.\n", out)
	return nil
}

var nonName = lazyre.New(`[^A-Za-z0-9_-]+`)

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
