package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/sim"
)

// TestImportRoundTrip imports every simulated node and plans the imported
// spec against the same node: nothing the node runs may change. What plan
// may still add is gpuform's own persistence of the same state (package
// holds, boot-time files), never another version or setting.
func TestImportRoundTrip(t *testing.T) {
	t.Parallel()
	for _, profile := range sim.Names() {
		t.Run(profile, func(t *testing.T) {
			t.Parallel()
			env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
			dir := t.TempDir()
			out := filepath.Join(dir, "main.gpuform.hcl")
			if code, _, errOut := runCLIEnv(t, env, "import", "-out", out, "sim://"+profile); code != ExitOK {
				t.Fatalf("import: exit %d\n%s", code, errOut)
			}
			if code, _, errOut := runCLIEnv(t, env, "validate", dir); code != ExitOK {
				t.Fatalf("imported spec does not validate:\n%s", errOut)
			}
			code, js, errOut := runCLIEnv(t, env, "plan", "-json", dir)
			if code != ExitOK {
				t.Fatalf("plan: exit %d\n%s", code, errOut)
			}
			var doc struct {
				Hosts []struct {
					Error           string
					ResourceChanges []struct {
						Resource       string
						Before, After  map[string]any
						RebootRequired bool `json:"reboot_required"`
					} `json:"resource_changes"`
				}
			}
			if err := json.Unmarshal([]byte(js), &doc); err != nil {
				t.Fatal(err)
			}
			for _, h := range doc.Hosts {
				if h.Error != "" {
					t.Fatalf("plan error: %s", h.Error)
				}
				for _, rc := range h.ResourceChanges {
					// Holding a package or persisting a setting for the next
					// boot changes nothing that runs: no reboot.
					persistOnly := true
					for k, after := range rc.After {
						if rc.Before[k] != after && k != "held" && k != "set_at_boot" && k != "load_at_boot" {
							persistOnly = false
						}
					}
					if persistOnly && rc.RebootRequired {
						t.Errorf("%s: holding or persisting what runs is marked 'reboot required'", rc.Resource)
					}
					for k, after := range rc.After {
						before, ok := rc.Before[k]
						// managed_by: the imported spec adopts what it
						// found (see TestOwnership).
						if ok && before != after && k != "held" && k != "set_at_boot" && k != "load_at_boot" && k != "package" && k != "packages" && k != plan.ManagedBy {
							t.Errorf("%s.%s would change %v -> %v", rc.Resource, k, before, after)
						}
					}
				}
			}
		})
	}
	// The converged node imports to a spec it already matches exactly: the
	// plan only adopts what it found (records it as the spec's), and once
	// applied there is nothing left to do.
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := t.TempDir()
	_, src, _ := runCLIEnv(t, env, "import", "sim://hgx-h100-converged")
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), src)
	code, out, _ := runCLIEnv(t, env, "plan", "-detailed-exitcode", dir)
	if code != ExitReport || strings.Count(out, `managed_by = "(no record)" -> `) != strings.Count(out, " will be updated in-place") || strings.Contains(out, "to add") && !strings.Contains(out, "Plan: 0 to add") {
		t.Errorf("converged node: exit %d\n%s", code, out)
	}
	if lines := strings.Count(out, "\n      ~ "); lines != strings.Count(out, "managed_by") {
		t.Errorf("converged node: the plan changes more than who manages each resource:\n%s", out)
	}
	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("converged node, apply: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, out, _ := runCLIEnv(t, env, "plan", "-detailed-exitcode", dir); code != ExitOK || !strings.Contains(out, "No changes") {
		t.Errorf("converged node after adopting: exit %d\n%s", code, out)
	}
	// import never overwrites a file.
	if code, _, errOut := runCLIEnv(t, env, "import", "-out", filepath.Join(dir, "main.gpuform.hcl"), "sim://hgx-h100-converged"); code != ExitFailed || !strings.Contains(errOut, "never overwrites") {
		t.Errorf("overwrite: exit %d %s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "main.gpuform.hcl")); err != nil {
		t.Fatal(err)
	}
}

func TestNodeName(t *testing.T) {
	for in, want := range map[string]string{
		"gpu001.dc1.example.com":  "gpu001",
		"sim://hgx-h100-stale/n1": "hgx-h100-stale-n1",
		"local://ci-runner":       "ci-runner",
		"10.0.0.7":                "node-10-0-0-7",
		"sim://dgx-a100":          "dgx-a100",
	} {
		if got := nodeName(in); got != want {
			t.Errorf("nodeName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestImportSaysWhatItDidNotFind imports a node without a driver: the spec
// names every component import looked for and did not find, and the GPUs
// the PCI bus shows are its hardware; a /dev/shm at half the RAM is written as "50%" so
// that nodes with other RAM sizes do not drift from it.
func TestImportSaysWhatItDidNotFind(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	code, src, errOut := runCLIEnv(t, env, "import", "sim://no-driver")
	if code != ExitOK {
		t.Fatalf("import: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{
		`gpu_model    = "H100 SXM5 80GB (HGX/DGX H100)"`,
		"gpu_count    = 8",
		`interconnect = "nvswitch"`,
		`{ index = 7, pci = "0000:df:00.0", numa = 1 },`,
		"# no NVIDIA driver found",
		"# no CUDA toolkit found",
		"# no NCCL found",
		"# no DCGM found",
		"# no container runtime or NVIDIA Container Toolkit found",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("import of a node without a driver lacks %q:\n%s", want, src)
		}
	}
	code, src, errOut = runCLIEnv(t, env, "import", "sim://hgx-h100-converged")
	if code != ExitOK || !strings.Contains(src, `size = "50%"`) || strings.Contains(src, "# no ") {
		t.Errorf("import of the converged node: exit %d, want shm size \"50%%\" and no 'not found' comment\n%s%s", code, src, errOut)
	}
}
