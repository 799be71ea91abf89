package lint

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/internal/cmdline"
)

// ncclMultiNodePerHostRule declares nccl_multi_node_per_host.
func ncclMultiNodePerHostRule() Rule {
	return Rule{
		Name:     "nccl_multi_node_per_host",
		Severity: Warning,
		Summary:  "An nccl_test launches one job across hosts but says multi_node = false, so verify -tier full starts it from every host at once.",
		Check:    checkNCCLMultiNodePerHost,
	}
}

// hostOptions returns the options of a launcher family that place ranks
// on other hosts: MPI host lists and files; Slurm node counts and lists
// (OpenMPI's own -N is processes per node, not a node count).
func hostOptions(family string) []string {
	switch family {
	case "mpi":
		return []string{"-H", "-host", "--host", "-hosts", "--hosts", "-hostfile", "--hostfile", "-machinefile", "--machinefile"}
	case "srun":
		return []string{"-N", "--nodes", "-w", "--nodelist"}
	}
	return nil
}

// spansHosts returns the launcher option of cmd that names other hosts,
// looking only before the test program so that the program's own options
// (nccl-tests -N, -w) do not count.
func spansHosts(cmd string) string {
	family := "mpi"
	switch cmdline.Launcher(cmd) {
	case "":
		return ""
	case "srun":
		family = "srun"
	}
	words, err := cmdline.Split(cmd)
	if err != nil {
		return ""
	}
	for _, w := range words {
		if strings.HasSuffix(w, "_perf") {
			break
		}
		opt, _, _ := strings.Cut(w, "=")
		for _, h := range hostOptions(family) {
			if opt == h {
				return opt
			}
		}
	}
	return ""
}

func checkNCCLMultiNodePerHost(ctx *Context) {
	for _, n := range ctx.Nodes() {
		if n.Verify == nil {
			continue
		}
		for _, t := range n.Verify.NCCLTests {
			if t == nil || !t.Command.Set || !t.MultiNode.Set || t.MultiNode.V {
				continue
			}
			opt := spansHosts(t.Command.V)
			if opt == "" {
				continue
			}
			ctx.Report(t.MultiNode.Range,
				fmt.Sprintf("%s: nccl_test %q launches across hosts (%s %s) but sets multi_node = false", nodeRef(n), t.Name, cmdline.Launcher(t.Command.V), opt),
				fmt.Sprintf("verify runs a single-node test on every host of the node at -tier full, so each of the %d host(s) would start the whole multi-host job at the same time: the jobs compete for the same GPUs and every result is wrong. Remove multi_node = false (the launcher makes it a multi-node test, run once per node group at -tier fleet), or drop %s to test each host on its own.", len(n.Hosts), opt))
		}
	}
}
