package lint

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/spec"
)

// TestNCCLMultiNodeOwnHosts: a multi-node command with its own host list
// is refused by the loader (validate), and lint, which gpuform lint runs on
// the spec all the same, says which hosts of the group the list leaves out
// and which it names outside the group (issue 27 item 3). The rule fixtures
// must load without errors, so this case is tested here.
func TestNCCLMultiNodeOwnHosts(t *testing.T) {
	tests := map[string]struct {
		command string
		want    string
	}{
		"host list":   {"mpirun -np 16 -H gpu01,gpu01,gpu02,gpu02 all_reduce_perf -g 1", `names its own hosts (-H gpu01,gpu02): gpu03, gpu04 of the node block would not take part`},
		"outside":     {"mpirun -np 16 -H gpu01,gpu09 all_reduce_perf -g 1", `gpu02, gpu03, gpu04 of the node block would not take part; gpu09 is not in the node block`},
		"srun":        {"srun -N 2 --nodelist=gpu03,gpu04 all_reduce_perf -g 1", `names its own hosts (--nodelist gpu03,gpu04): gpu01, gpu02 of the node block would not take part`},
		"host file":   {"mpirun --hostfile /etc/hosts.txt -np 32 all_reduce_perf -g 1", `reads its hosts from /etc/hosts.txt, not from the node block's 4 host(s)`},
		"whole group": {"mpirun -np 32 -H gpu01,gpu02,gpu03,gpu04 all_reduce_perf -g 1", `it names the node block's hosts again`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			src := `node "train" {
  hosts = ["gpu01", "gpu02", "ssh://root@gpu03:2222", "gpu04"]
  verify {
    nccl_test "fleet" {
      command = "` + tt.command + `"
    }
  }
}
`
			cfg, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte(src)}, spec.LoadOptions{BuiltinModules: modules.FS()})
			if !diags.HasErrors() || !strings.Contains(diags.Error(), "Multi-node nccl_test names its own hosts") {
				t.Fatalf("validate does not refuse %q: %v", tt.command, diags)
			}
			res, _ := Run(cfg, Options{KB: testKB, Now: testNow, MinSeverity: Info})
			var got []string
			for _, f := range res.Findings {
				if f.Rule == "nccl_multi_node_hosts" {
					got = append(got, f.Summary)
				}
			}
			if len(got) != 1 || !strings.Contains(got[0], tt.want) {
				t.Errorf("findings %q, want one with %q", got, tt.want)
			}
		})
	}
}
