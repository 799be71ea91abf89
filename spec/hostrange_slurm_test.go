package spec_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/spec"
)

// Slurm's own expansion (scontrol show hostnames) is the reference for
// every hostlist expression Slurm accepts.
func TestHostListMatchesScontrol(t *testing.T) {
	exprs := []string{
		"gpu[001-004],gpu010",
		"gpu[1-2],cpu[3-4]",
		"a,b,c",
		"a[1-2]b[1-2]",
		"x[1-3]y[08-10]",
		"gpu[1-010]",
		"gpu[08-11]",
		"gpu[1,3,5-6]",
		"gpu[1-2,02-03]",
		"node[7]",
		"gpu[0-1],gpu[1-2]",
		"dgx-a100-[01-02],dgx-h100-[1-3]",
	}
	scontrol, err := exec.LookPath("scontrol")
	if err != nil {
		sshtest.Missing(t, "scontrol is not installed (apt-get install slurm-wlm)")
	}
	// show hostnames needs a configuration to read, not a controller.
	conf := filepath.Join(t.TempDir(), "slurm.conf")
	if err := os.WriteFile(conf, []byte("ClusterName=hostlist\nSlurmctldHost=localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, e := range exprs {
		t.Run(e, func(t *testing.T) {
			cmd := exec.Command(scontrol, "show", "hostnames", e)
			cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("scontrol show hostnames %s: %v", e, err)
			}
			want := strings.Fields(string(out))
			got, err := spec.ExpandHostPattern(e)
			if err != nil {
				t.Fatalf("gpuform refuses %q, which Slurm expands to %v: %v", e, want, err)
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("gpuform %v, Slurm %v", got, want)
			}
		})
	}
}
