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
	for _, res := range []string{"cpu_governor"} {
		if recs[res]["spec"] != "prov-a" || recs[res]["source"] != a {
			t.Errorf("owner of %s = %v, want spec prov-a from %s", res, recs[res], a)
		}
	}
	// sysctl and nccl_conf are owned key by key (TestOwnershipPerKey):
	// prov-a's keys, not the drop-in's kernel.numa_balancing it does not
	// declare.
	if got := keyOwners(t, root, "sysctl"); got["vm.swappiness"] != "prov-a" || len(got) != 1 {
		t.Errorf("sysctl key owners = %v, want vm.swappiness by prov-a", got)
	}
	if got := keyOwners(t, root, "nccl_conf"); got["NCCL_IB_HCA"] != "prov-a" || got["NCCL_SOCKET_IFNAME"] != "prov-a" || len(got) != 2 {
		t.Errorf("nccl_conf key owners = %v, want NCCL_IB_HCA and NCCL_SOCKET_IFNAME by prov-a", got)
	}
	for _, res := range []string{"sysctl", "nccl_conf", "kernel_cmdline", "limits", "nvidia_peermem"} {
		if _, ok := recs[res]; ok {
			t.Errorf("%s is recorded although prov-a does not declare it: %v", res, recs[res])
		}
	}
	// Files prov-a changed name it; the governor and sysctl drop-ins it
	// adopted as they were keep the header of the gpuform that wrote them.
	for _, f := range []string{"etc/nccl.conf"} {
		if c := readRoot(t, root, f); !strings.HasPrefix(c, `# Managed by gpuform, spec "prov-a"`) || !strings.Contains(c, "\n# Applied from "+a+" by ") {
			t.Errorf("%s does not name its spec and origin:\n%s", f, c)
		}
	}
	for _, f := range []string{"etc/tmpfiles.d/90-gpuform-governor.conf", "etc/sysctl.d/90-gpuform.conf"} {
		if c := readRoot(t, root, f); !strings.HasPrefix(c, "# Managed by gpuform.\n") {
			t.Errorf("the adopted %s was rewritten:\n%s", f, c)
		}
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
	if code != ExitFailed || !strings.Contains(out+errOut, `sysctl key vm.swappiness is managed by spec "prov-a" (applied from `+a) || !strings.Contains(out+errOut, "-take-over sysctl") {
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
	if _, ok := recs["cpu_governor"]; ok || recs["hugepages"]["spec"] != "prov-b" || keyOwners(t, root, "sysctl")["vm.swappiness"] != "prov-a" {
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
	if code != ExitOK || keyOwners(t, root, "sysctl")["vm.swappiness"] != "prov-b" || !strings.Contains(readRoot(t, root, "etc/sysctl.d/90-gpuform.conf"), "vm.swappiness = 10") {
		t.Fatalf("apply prov-b -take-over sysctl: exit %d, sysctl key owners %v\n%s\n%s", code, keyOwners(t, root, "sysctl"), out, errOut)
	}
	code, out, errOut = runPA(t, env, "", "plan", a)
	if code != ExitFailed || !strings.Contains(out+errOut, `sysctl key vm.swappiness is managed by spec "prov-b"`) {
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

// keyOwners reads the key records of resource res on the simulated node
// under root: key -> spec.
func keyOwners(t *testing.T, root, res string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "etc/gpuform/owners.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Keys map[string]map[string]map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("owners.json: %v\n%s", err, b)
	}
	out := map[string]string{}
	for k, rec := range doc.Keys[res] {
		out[k] = rec["spec"]
	}
	return out
}

// body returns content without gpuform's header lines.
func body(content string) string {
	for strings.HasPrefix(content, "# Managed by gpuform") || strings.HasPrefix(content, "# Applied from ") {
		_, content, _ = strings.Cut(content, "\n")
	}
	return content
}

// TestOwnershipPerKey walks two specs sharing the keys of one resource on
// one simulated node (issue 30, seen item 6: the README's team spec that
// adds one sysctl was refused, "sysctl is managed by spec …"): spec B adds
// a sysctl and an nccl.conf key next to spec A's, A's lines stay byte for
// byte and A plans no change; B dropping its key removes only that line;
// A dropping one of its keys never touches B's; B declaring A's key is
// refused naming the key and spec A.
func TestOwnershipPerKey(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	specs := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	root := filepath.Join(state, "hgx-h100-converged")
	const sysctlFile, ncclFile = "etc/sysctl.d/90-gpuform.conf", "etc/nccl.conf"
	apply := func(what, dir string) string {
		t.Helper()
		code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", dir)
		if code != ExitOK {
			t.Fatalf("apply %s: exit %d\n%s\n%s", what, code, out, errOut)
		}
		return out
	}
	noChanges := func(what, dir string) {
		t.Helper()
		code, out, errOut := runPA(t, env, "", "plan", "-detailed-exitcode", dir)
		if code != ExitOK || !strings.Contains(out, "No changes") {
			t.Fatalf("plan %s: exit %d, want no changes\n%s\n%s", what, code, out, errOut)
		}
	}

	aFull := `
  sysctl = {
    "vm.swappiness"   = "1"
    "vm.max_map_count" = "262144"
  }
  affinity {
    gpu_nic  = module.hgx.gpu_nic
    nccl_env = true
  }`
	a := ownerSpec(t, specs, "prov-a", aFull)
	apply("prov-a", a)
	noChanges("prov-a after its apply", a)
	if got := keyOwners(t, root, "sysctl"); got["vm.swappiness"] != "prov-a" || got["vm.max_map_count"] != "prov-a" || len(got) != 2 {
		t.Fatalf("sysctl key owners after prov-a = %v", got)
	}
	sysA, ncclA := readRoot(t, root, sysctlFile), readRoot(t, root, ncclFile)

	// prov-b adds one sysctl and one nccl.conf key on the same node.
	bWith := `
  sysctl = { "net.core.rmem_max" = "16777216" }
  affinity {
    nccl_env           = true
    nccl_socket_ifname = "^docker,lo"
  }`
	b := ownerSpec(t, specs, "prov-b", bWith)
	code, out, errOut := runPA(t, env, "", "plan", b)
	if code != ExitOK || strings.Contains(out, "vm.swappiness") || strings.Contains(out, "vm.max_map_count") || strings.Contains(out, "NCCL_IB_HCA") || !strings.Contains(out, "net.core.rmem_max") || !strings.Contains(out, "NCCL_SOCKET_IFNAME") {
		t.Fatalf("plan prov-b: exit %d, want only prov-b's keys\n%s\n%s", code, out, errOut)
	}
	apply("prov-b", b)
	sysAB, ncclAB := readRoot(t, root, sysctlFile), readRoot(t, root, ncclFile)
	if body(sysAB) != body(sysA)+"net.core.rmem_max = 16777216\n" {
		t.Errorf("sysctl drop-in after prov-b, want prov-a's lines kept byte for byte and prov-b's appended:\nbefore:\n%s\nafter:\n%s", sysA, sysAB)
	}
	if body(ncclAB) != body(ncclA)+"NCCL_SOCKET_IFNAME=^docker,lo\n" {
		t.Errorf("nccl.conf after prov-b, want prov-a's lines kept byte for byte and prov-b's appended:\nbefore:\n%s\nafter:\n%s", ncclA, ncclAB)
	}
	if !strings.HasPrefix(sysAB, `# Managed by gpuform, specs "prov-a" (keys vm.max_map_count, vm.swappiness), "prov-b" (key net.core.rmem_max).`) {
		t.Errorf("the shared drop-in's header does not name both specs and their keys:\n%s", sysAB)
	}
	if got := strings.TrimSpace(readRoot(t, root, "proc/sys/net/core/rmem_max")); got != "16777216" {
		t.Errorf("net.core.rmem_max on the node = %q, want 16777216", got)
	}
	if got := keyOwners(t, root, "sysctl"); got["vm.swappiness"] != "prov-a" || got["vm.max_map_count"] != "prov-a" || got["net.core.rmem_max"] != "prov-b" || len(got) != 3 {
		t.Errorf("sysctl key owners after prov-b = %v", got)
	}
	if got := keyOwners(t, root, "nccl_conf"); got["NCCL_IB_HCA"] != "prov-a" || got["NCCL_SOCKET_IFNAME"] != "prov-b" || len(got) != 2 {
		t.Errorf("nccl_conf key owners after prov-b = %v", got)
	}
	noChanges("prov-a after prov-b's apply", a)
	noChanges("prov-b after its apply", b)

	// prov-b declaring prov-a's key is the error it always was, naming
	// the key and the spec.
	bClash := ownerSpec(t, specs, "prov-b", `
  sysctl = { "vm.max_map_count" = "65530" }
  affinity {
    gpu_nic            = module.hgx.gpu_nic
    nccl_env           = true
    nccl_socket_ifname = "^docker,lo"
  }`)
	code, out, errOut = runPA(t, env, "", "plan", bClash)
	for _, want := range []string{`sysctl key vm.max_map_count is managed by spec "prov-a" (applied from ` + a, `nccl_conf key NCCL_IB_HCA is managed by spec "prov-a"`, "-take-over sysctl"} {
		if code != ExitFailed || !strings.Contains(out+errOut, want) {
			t.Errorf("plan prov-b declaring prov-a's keys: exit %d, want %q\n%s\n%s", code, want, out, errOut)
		}
	}
	if readRoot(t, root, sysctlFile) != sysAB {
		t.Fatal("a refused plan changed the drop-in")
	}
	b = ownerSpec(t, specs, "prov-b", bWith)

	// prov-a drops vm.max_map_count: that line goes, prov-b's stays.
	a = ownerSpec(t, specs, "prov-a", `
  sysctl = { "vm.swappiness" = "1" }
  affinity {
    gpu_nic  = module.hgx.gpu_nic
    nccl_env = true
  }`)
	code, out, errOut = runPA(t, env, "", "plan", a)
	if code != ExitOK || !strings.Contains(out, "- \"vm.max_map_count\"") && !strings.Contains(out, "- vm.max_map_count") || strings.Contains(out, "rmem_max") {
		t.Fatalf("plan prov-a without vm.max_map_count: exit %d\n%s\n%s", code, out, errOut)
	}
	apply("prov-a without vm.max_map_count", a)
	sysNow := readRoot(t, root, sysctlFile)
	if body(sysNow) != strings.Replace(body(sysAB), "vm.max_map_count = 262144\n", "", 1) {
		t.Errorf("drop-in after prov-a dropped vm.max_map_count, want only that line gone:\nbefore:\n%s\nafter:\n%s", sysAB, sysNow)
	}
	if got := keyOwners(t, root, "sysctl"); got["vm.swappiness"] != "prov-a" || got["net.core.rmem_max"] != "prov-b" || len(got) != 2 {
		t.Errorf("sysctl key owners after prov-a dropped a key = %v", got)
	}
	noChanges("prov-b after prov-a dropped a key", b)

	// prov-b drops its keys: only its lines go.
	b = ownerSpec(t, specs, "prov-b", "")
	code, out, errOut = runPA(t, env, "", "plan", b)
	if code != ExitOK || !strings.Contains(out, "rmem_max") || !strings.Contains(out, "NCCL_SOCKET_IFNAME") || strings.Contains(out, "vm.swappiness") || strings.Contains(out, "NCCL_IB_HCA") {
		t.Fatalf("plan prov-b without its keys: exit %d\n%s\n%s", code, out, errOut)
	}
	apply("prov-b without its keys", b)
	if got := readRoot(t, root, sysctlFile); body(got) != strings.Replace(body(sysNow), "net.core.rmem_max = 16777216\n", "", 1) || !strings.HasPrefix(got, `# Managed by gpuform, spec "prov-a". Change the spec, not this file.`) {
		t.Errorf("drop-in after prov-b dropped its key:\nbefore:\n%s\nafter:\n%s", sysNow, got)
	}
	if got := readRoot(t, root, ncclFile); body(got) != body(ncclA) {
		t.Errorf("nccl.conf after prov-b dropped its key, want prov-a's as it was:\n%s\nnow:\n%s", ncclA, got)
	}
	if got := keyOwners(t, root, "nccl_conf"); got["NCCL_IB_HCA"] != "prov-a" || len(got) != 1 {
		t.Errorf("nccl_conf key owners after prov-b dropped its key = %v", got)
	}
	noChanges("prov-a after prov-b dropped its keys", a)
	noChanges("prov-b after dropping its keys", b)
}

// TestOwnershipPerKeyOldRecords: a node whose owners.json a gpuform
// before key records wrote (format 1, sysctl recorded as a whole) keeps
// every key of that drop-in under the spec recorded: another spec may add
// its own key next to them, never take one silently.
func TestOwnershipPerKeyOldRecords(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	specs := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	root := filepath.Join(state, "hgx-h100-converged")
	const sysctlFile = "etc/sysctl.d/90-gpuform.conf"
	a := ownerSpec(t, specs, "prov-a", `
  sysctl = {
    "kernel.numa_balancing" = "0"
    "vm.swappiness"         = "1"
    "vm.max_map_count"      = "262144"
  }`)
	if code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", a); code != ExitOK {
		t.Fatalf("apply prov-a: exit %d\n%s\n%s", code, out, errOut)
	}
	// What the older gpuform wrote: prov-a manages "sysctl", the whole
	// drop-in.
	old := `{
  "comment": "Managed by gpuform.",
  "format_version": "1",
  "resources": {
    "sysctl": {"spec": "prov-a", "source": "` + a + `", "applied_by": "alice@ws"}
  }
}
`
	if err := os.WriteFile(filepath.Join(root, "etc/gpuform/owners.json"), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runPA(t, env, "", "plan", "-detailed-exitcode", a)
	if code != ExitOK || !strings.Contains(out, "No changes") {
		t.Fatalf("plan prov-a on its old records: exit %d\n%s\n%s", code, out, errOut)
	}
	if readRoot(t, root, "etc/gpuform/owners.json") != old {
		t.Fatal("a plan changed the records")
	}

	b := ownerSpec(t, specs, "prov-b", `
  sysctl = { "kernel.numa_balancing" = "1" }`)
	code, out, errOut = runPA(t, env, "", "plan", b)
	if code != ExitFailed || !strings.Contains(out+errOut, `sysctl key kernel.numa_balancing is managed by spec "prov-a" (applied from `+a+` by alice@ws)`) {
		t.Fatalf("plan prov-b declaring a key of prov-a's old drop-in: exit %d\n%s\n%s", code, out, errOut)
	}

	before := readRoot(t, root, sysctlFile)
	b = ownerSpec(t, specs, "prov-b", `
  sysctl = { "net.core.rmem_max" = "16777216" }`)
	if code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", b); code != ExitOK {
		t.Fatalf("apply prov-b: exit %d\n%s\n%s", code, out, errOut)
	}
	if got := readRoot(t, root, sysctlFile); body(got) != body(before)+"net.core.rmem_max = 16777216\n" {
		t.Errorf("drop-in after prov-b on old records:\nbefore:\n%s\nafter:\n%s", before, got)
	}
	got := keyOwners(t, root, "sysctl")
	want := map[string]string{"kernel.numa_balancing": "prov-a", "vm.swappiness": "prov-a", "vm.max_map_count": "prov-a", "net.core.rmem_max": "prov-b"}
	if len(got) != len(want) {
		t.Errorf("sysctl key owners %v, want %v", got, want)
	}
	for k, s := range want {
		if got[k] != s {
			t.Errorf("owner of %s = %q, want %q", k, got[k], s)
		}
	}
	if _, ok := owners(t, root)["sysctl"]; ok {
		t.Error("the whole-resource record of sysctl is still there next to its key records")
	}
	if code, out, errOut := runPA(t, env, "", "plan", "-detailed-exitcode", a); code != ExitOK || !strings.Contains(out, "No changes") {
		t.Fatalf("plan prov-a after prov-b: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestOwnershipPerKeyKernelArgs: two specs add their own kernel arguments
// to gpuform's GRUB drop-in on one simulated node; the same argument name
// in both is refused naming it and the spec that has it.
func TestOwnershipPerKeyKernelArgs(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	specs := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	root := filepath.Join(state, "hgx-h100-converged")
	const dropIn = "etc/default/grub.d/90-gpuform.cfg"
	cmdline := func() string {
		t.Helper()
		c := readRoot(t, root, dropIn)
		_, line, _ := strings.Cut(c, "GRUB_CMDLINE_LINUX=")
		return line
	}
	a := ownerSpec(t, specs, "prov-a", `  kernel_args = ["iommu=pt"]`)
	if code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", a); code != ExitOK {
		t.Fatalf("apply prov-a: exit %d\n%s\n%s", code, out, errOut)
	}
	b := ownerSpec(t, specs, "prov-b", `  kernel_args = ["pci=realloc"]`)
	code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", b)
	if code != ExitOK || strings.Contains(out, "iommu") {
		t.Fatalf("apply prov-b: exit %d, want only its own argument shown\n%s\n%s", code, out, errOut)
	}
	if got := cmdline(); got != `"$GRUB_CMDLINE_LINUX iommu=pt pci=realloc"`+"\n" {
		t.Errorf("drop-in after prov-b: %q", got)
	}
	if code, out, errOut := runPA(t, env, "", "plan", "-detailed-exitcode", a); code != ExitOK || !strings.Contains(out, "No changes") {
		t.Fatalf("plan prov-a after prov-b: exit %d\n%s\n%s", code, out, errOut)
	}
	clash := ownerSpec(t, specs, "prov-b", `  kernel_args = ["pci=realloc", "iommu=off"]`)
	if code, out, errOut := runPA(t, env, "", "plan", clash); code != ExitFailed || !strings.Contains(out+errOut, `kernel_cmdline key iommu is managed by spec "prov-a"`) {
		t.Fatalf("plan prov-b declaring iommu: exit %d\n%s\n%s", code, out, errOut)
	}
	b = ownerSpec(t, specs, "prov-b", "")
	if code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", b); code != ExitOK {
		t.Fatalf("apply prov-b without its argument: exit %d\n%s\n%s", code, out, errOut)
	}
	if got := cmdline(); got != `"$GRUB_CMDLINE_LINUX iommu=pt"`+"\n" {
		t.Errorf("drop-in after prov-b dropped its argument: %q", got)
	}
	if code, out, errOut := runPA(t, env, "", "plan", "-detailed-exitcode", a); code != ExitOK || !strings.Contains(out, "No changes") {
		t.Fatalf("plan prov-a at the end: exit %d\n%s\n%s", code, out, errOut)
	}
}
