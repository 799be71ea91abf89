package lint

import (
	"path/filepath"
	"strings"
	"testing"
)

// Issue 21: on a containerd node default_shm_size is a Docker daemon
// setting gpuform cannot apply (plan warns that containerd has none), so
// container_shm_size must not ask for it there.
func TestContainerShmSizeSkipsContainerd(t *testing.T) {
	src := readFile(t, filepath.Join("testdata", "rules", "container_shm_size", "fires.gpuform.hcl"))
	for name, edit := range map[string]func(string) string{
		"docker": func(s string) string { return s },
		"containerd": func(s string) string {
			return strings.Replace(s, `runtime                  = "docker"`, `runtime                  = "containerd"`, 1)
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := loadSpec(t, map[string]string{"main.gpuform.hcl": edit(src)})
			res, diags := Run(cfg, Options{KB: testKB, Now: testNow, MinSeverity: Info})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			n := 0
			for _, f := range res.Findings {
				if f.Rule == "container_shm_size" {
					n++
				}
			}
			if want := map[string]int{"docker": 1, "containerd": 0, "enroot": 0}[name]; n != want {
				t.Errorf("%d container_shm_size findings, want %d", n, want)
			}
		})
	}
}
