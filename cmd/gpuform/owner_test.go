package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ownerSpec writes a spec directory named name (its default spec name)
// with one node on sim://hgx-h100-converged declaring body.
func ownerSpec(t *testing.T, parent, name, body string) string {
	t.Helper()
	dir := filepath.Join(parent, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := `module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

node "train" {
  hosts    = ["sim://hgx-h100-converged"]
  hardware = module.hgx.hardware
` + body + `
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.gpuform.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// owners reads the owner records of the simulated node under state.
func owners(t *testing.T, root string) map[string]map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "etc/gpuform/owners.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resources map[string]map[string]string `json:"resources"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("owners.json: %v\n%s", err, b)
	}
	return doc.Resources
}

func readRoot(t *testing.T, root, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(root, path string) bool {
	_, err := os.Stat(filepath.Join(root, path))
	return err == nil
}

// TestOwnership walks two provisioning specs and a verification-only one
// over one simulated node (issue 9, seen item 1): the verify-only spec
// plans nothing, a second spec declaring the first one's sysctl is refused
// with the first spec's name and origin, removing a block removes only that
// resource (nothing of the other spec's, nothing nobody recorded), and
// -take-over hands a resource from one spec to the other.
func TestOwnership(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	specs := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	root := filepath.Join(state, "hgx-h100-converged")

	a := ownerSpec(t, specs, "prov-a", `
  sysctl       = { "vm.swappiness" = "1" }
  cpu_governor = "performance"
  affinity {
    gpu_nic            = module.hgx.gpu_nic
    nccl_env           = true
    nccl_socket_ifname = "^docker,lo"
  }`)
	code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", a)
	if code != ExitOK {
		t.Fatalf("apply prov-a: exit %d\n%s\n%s", code, out, errOut)
	}
	// The node had these from a gpuform without records: prov-a adopts
	// what it declares, and only that.
	recs := owners(t, root)
	for _, res := range []string{"sysctl", "cpu_governor", "nccl_conf"} {
		if recs[res]["spec"] != "prov-a" || recs[res]["source"] != a {
			t.Errorf("owner of %s = %v, want spec prov-a from %s", res, recs[res], a)
		}
	}
	for _, res := range []string{"kernel_cmdline", "limits", "nvidia_peermem"} {
		if _, ok := recs[res]; ok {
			t.Errorf("%s is recorded although prov-a does not declare it: %v", res, recs[res])
		}
	}
	// Files prov-a changed name it; the governor drop-in it adopted as it
	// was keeps the header of the gpuform that wrote it.
	for _, f := range []string{"etc/sysctl.d/90-gpuform.conf", "etc/nccl.conf"} {
		if c := readRoot(t, root, f); !strings.HasPrefix(c, `# Managed by gpuform, spec "prov-a"`) || !strings.Contains(c, "\n# Applied from "+a+" by ") {
			t.Errorf("%s does not name its spec and origin:\n%s", f, c)
		}
	}
	if c := readRoot(t, root, "etc/tmpfiles.d/90-gpuform-governor.conf"); !strings.HasPrefix(c, "# Managed by gpuform.\n") {
		t.Errorf("the adopted governor drop-in was rewritten:\n%s", c)
	}
	if c := readRoot(t, root, "etc/nccl.conf"); !strings.Contains(c, "\nNCCL_IB_HCA=mlx5_0,") || !strings.Contains(c, "\nNCCL_SOCKET_IFNAME=^docker,lo\n") {
		t.Errorf("nccl.conf lost a setting:\n%s", c)
	}
	code, out, errOut = runPA(t, env, "", "plan", "-detailed-exitcode", a)
	if code != ExitOK || !strings.Contains(out, "No changes") {
		t.Fatalf("plan prov-a after apply: exit %d\n%s\n%s", code, out, errOut)
	}

	// The CI gate: verification only, so nothing to plan on this node.
	code, out, errOut = runPA(t, env, "", "plan", "-detailed-exitcode", "-var", `hosts=["sim://hgx-h100-converged"]`, "../../examples/ci-preflight")
	if code != ExitOK || !strings.Contains(out, "No changes") {
		t.Fatalf("plan ci-preflight on the converged node: exit %d\n%s\n%s", code, out, errOut)
	}

	b := ownerSpec(t, specs, "prov-b", `
  sysctl = { "vm.swappiness" = "10" }
  hugepages {
    size  = "2MiB"
    count = 64
  }`)
	code, out, errOut = runPA(t, env, "", "plan", b)
	if code != ExitFailed || !strings.Contains(out+errOut, `sysctl is managed by spec "prov-a" (applied from `+a) || !strings.Contains(out+errOut, "-take-over sysctl") {
		t.Fatalf("plan prov-b declaring prov-a's sysctl: exit %d\n%s\n%s", code, out, errOut)
	}

	b = ownerSpec(t, specs, "prov-b", `
  hugepages {
    size  = "2MiB"
    count = 64
  }`)
	code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", b)
	if code != ExitOK || owners(t, root)["hugepages"]["spec"] != "prov-b" {
		t.Fatalf("apply prov-b (hugepages): exit %d, owners %v\n%s\n%s", code, owners(t, root), out, errOut)
	}

	// prov-a drops its cpu_governor: that goes, and nothing else does.
	a = ownerSpec(t, specs, "prov-a", `
  sysctl = { "vm.swappiness" = "1" }
  affinity {
    gpu_nic            = module.hgx.gpu_nic
    nccl_env           = true
    nccl_socket_ifname = "^docker,lo"
  }`)
	code, out, errOut = runPA(t, env, "", "plan", a)
	if code != ExitOK || !strings.Contains(out, "  - cpu_governor") || !strings.Contains(out, "0 to add, 0 to change, 1 to destroy") {
		t.Fatalf("plan prov-a without cpu_governor: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", a)
	if code != ExitOK {
		t.Fatalf("apply prov-a without cpu_governor: exit %d\n%s\n%s", code, out, errOut)
	}
	if exists(root, "etc/tmpfiles.d/90-gpuform-governor.conf") {
		t.Error("prov-a's governor drop-in is still there")
	}
	for _, f := range []string{"etc/sysctl.d/91-gpuform-hugepages.conf", "etc/security/limits.d/90-gpuform.conf", "etc/default/grub.d/90-gpuform.cfg", "etc/modules-load.d/gpuform.conf"} {
		if !exists(root, f) {
			t.Errorf("%s is gone: prov-a removed what it does not manage", f)
		}
	}
	recs = owners(t, root)
	if _, ok := recs["cpu_governor"]; ok || recs["hugepages"]["spec"] != "prov-b" || recs["sysctl"]["spec"] != "prov-a" {
		t.Errorf("owners after prov-a dropped cpu_governor: %v", recs)
	}

	// prov-b takes the sysctl over, explicitly.
	b = ownerSpec(t, specs, "prov-b", `
  sysctl = { "vm.swappiness" = "10" }
  hugepages {
    size  = "2MiB"
    count = 64
  }`)
	code, out, errOut = runPA(t, env, "", "plan", "-take-over", "sysctl", b)
	if code != ExitOK || !strings.Contains(out, `managed_by`) || !strings.Contains(out, `"prov-a" -> "prov-b"`) {
		t.Fatalf("plan prov-b -take-over sysctl: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runPA(t, env, "", "apply", "-auto-approve", "-take-over", "sysctl", b)
	if code != ExitOK || owners(t, root)["sysctl"]["spec"] != "prov-b" || !strings.Contains(readRoot(t, root, "etc/sysctl.d/90-gpuform.conf"), "vm.swappiness = 10") {
		t.Fatalf("apply prov-b -take-over sysctl: exit %d, owners %v\n%s\n%s", code, owners(t, root), out, errOut)
	}
	code, out, errOut = runPA(t, env, "", "plan", a)
	if code != ExitFailed || !strings.Contains(out+errOut, `sysctl is managed by spec "prov-b"`) {
		t.Fatalf("plan prov-a after the take-over: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestTakeOverNamesAResource: a -take-over that names no resource type is
// refused before any host is reached.
func TestTakeOverNamesAResource(t *testing.T) {
	code, _, errOut := runPA(t, []string{"GPUFORM_SIM_STATE=" + t.TempDir()}, "", "plan", "-take-over", "sysctls", "testdata/planapply")
	if code == ExitOK || !strings.Contains(errOut, `"sysctls" is not a resource`) {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
}
