package lint

import (
	"path/filepath"
	"strings"
	"testing"
)

// Issue 21: an Apptainer node is not a Docker node. Its containers bind
// the host's /dev/shm (container_shm_size asked for Docker's
// default_shm_size, which gpuform does not apply there), and --nv binds
// the driver's own libraries without the NVIDIA Container Toolkit
// (container_nvidia_runtime said containers would start without GPUs).
// The same spec on Docker still gets both findings.
func TestApptainerIsNotDocker(t *testing.T) {
	src := readFile(t, filepath.Join("testdata", "rules", "apptainer_mount_dev", "clean.gpuform.hcl"))
	noToolkit := strings.Replace(src, "    nvidia_container_toolkit = \"1.17.8\"\n", "", 1)
	if noToolkit == src {
		t.Fatal("fixture has no nvidia_container_toolkit line")
	}
	for name, tc := range map[string]struct {
		src  string
		want map[string]int
	}{
		"apptainer": {noToolkit, map[string]int{"container_shm_size": 0, "container_nvidia_runtime": 0}},
		"docker": {strings.NewReplacer(`runtime                  = "apptainer"`, `runtime                  = "docker"`, `    apptainer_mount_dev      = "minimal"`+"\n", "").Replace(noToolkit),
			map[string]int{"container_shm_size": 1, "container_nvidia_runtime": 1}},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := loadSpec(t, map[string]string{"main.gpuform.hcl": tc.src})
			res, diags := Run(cfg, Options{KB: testKB, Now: testNow, MinSeverity: Info})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			got := map[string]int{}
			for _, f := range res.Findings {
				if _, ok := tc.want[f.Rule]; ok {
					got[f.Rule]++
				}
			}
			for rule, n := range tc.want {
				if got[rule] != n {
					t.Errorf("%d %s findings, want %d", got[rule], rule, n)
				}
			}
		})
	}
}
