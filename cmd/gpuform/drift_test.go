package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// copyRoot copies a simulated root (files, directories and links as they
// are) so that one converged host can be the start of many.
func copyRoot(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, dst)
		case d.IsDir():
			return os.MkdirAll(dst, info.Mode().Perm())
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(dst, b, info.Mode().Perm())
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// edit rewrites one file of a root; it fails the test when old is not in
// the file, so a drift the test means to plant cannot silently be none.
func edit(t *testing.T, root, path, old, repl string) {
	t.Helper()
	p := filepath.Join(root, path)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s does not contain %q:\n%s", path, old, b)
	}
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(b), old, repl)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// dpkgVersion sets the installed version of one package in the root's
// dpkg database, as a hand-run install of another release would.
func dpkgVersion(t *testing.T, root, pkg, from, to string) {
	t.Helper()
	edit(t, root, "var/lib/dpkg/status", "Package: "+pkg+"\n", "Package: "+pkg+"\n")
	p := filepath.Join(root, "var/lib/dpkg/status")
	b, _ := os.ReadFile(p)
	stanzas := strings.Split(string(b), "\n\n")
	for i, s := range stanzas {
		if strings.HasPrefix(strings.TrimLeft(s, "\n"), "Package: "+pkg+"\n") {
			if !strings.Contains(s, "Version: "+from+"\n") {
				t.Fatalf("%s is not at %s:\n%s", pkg, from, s)
			}
			stanzas[i] = strings.Replace(s, "Version: "+from+"\n", "Version: "+to+"\n", 1)
		}
	}
	if err := os.WriteFile(p, []byte(strings.Join(stanzas, "\n\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

type verifyCheck struct{ ID, Status, Observed, Expected, Message string }

// verifyJSON runs `verify -format json` and returns each host's checks.
func verifyJSON(t *testing.T, env []string, args ...string) (int, map[string][]verifyCheck, string) {
	t.Helper()
	code, out, errOut := runCLIEnv(t, env, append([]string{"verify", "-format", "json"}, args...)...)
	var doc struct {
		Hosts []struct {
			Host   string
			Checks []verifyCheck
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("verify: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	hosts := map[string][]verifyCheck{}
	for _, h := range doc.Hosts {
		hosts[h.Host] = h.Checks
	}
	return code, hosts, out
}

// failedIDs splits the ids of failed and errored checks into the spec.*
// group and the others, sorted.
func failedIDs(checks []verifyCheck) (spec, other []string) {
	for _, c := range checks {
		if c.Status != "fail" && c.Status != "error" {
			continue
		}
		if strings.HasPrefix(c.ID, "spec.") {
			spec = append(spec, c.ID)
		} else {
			other = append(other, c.ID)
		}
	}
	sort.Strings(spec)
	sort.Strings(other)
	return spec, other
}

// TestVerifyDriftMatrix: for each resource type, a host converged by apply
// gets one setting changed on disk; verify then fails exactly that
// resource's spec.* check, naming the attribute with the observed and the
// expected value, and plan shows exactly that change. A drift that also
// breaks a live check (a stopped fabric manager) fails that check too, and
// no other.
func TestVerifyDriftMatrix(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := "testdata/drift"
	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	converged := filepath.Join(state, "hgx-h100-stale@converged")

	cases := []struct {
		resource string
		drift    func(t *testing.T, root string)
		// observed and expected are parts of the failed check's values.
		observed, expected string
		// also are the checks outside spec.* that the drift fails too.
		also []string
	}{
		{"driver_package", func(t *testing.T, r string) {
			dpkgVersion(t, r, "cuda-drivers-550", "550.127.08-0ubuntu1", "550.90.07-0ubuntu1")
		}, "version=550.90.07", "version=550.127.08", nil},
		{"fabric_manager", func(t *testing.T, r string) {
			if err := os.Remove(filepath.Join(r, "run/systemd/units/invocation:nvidia-fabricmanager.service")); err != nil {
				t.Fatal(err)
			}
		}, "service nvidia-fabricmanager.service=enabled, inactive", "service nvidia-fabricmanager.service=enabled, active", []string{"host.fabric_manager"}},
		{"nvidia_peermem", func(t *testing.T, r string) {
			edit(t, r, "proc/modules", "\nnvidia_peermem ", "\nnvidia_peermem_gone ")
		}, "loaded=false", "loaded=true", []string{"host.peermem"}},
		{"nvidia_persistenced", func(t *testing.T, r string) {
			if err := os.Remove(filepath.Join(r, "run/systemd/units/invocation:nvidia-persistenced.service")); err != nil {
				t.Fatal(err)
			}
		}, "active=inactive", "active=active", nil},
		{"cuda_toolkit", func(t *testing.T, r string) {
			dpkgVersion(t, r, "cuda-toolkit-12-4", "12.4.1-1", "12.4.0-1")
		}, "version=12.4.0", "version=12.4.1", nil},
		{"nccl", func(t *testing.T, r string) {
			dpkgVersion(t, r, "libnccl2", "2.21.5-1+cuda12.4", "2.21.1-1+cuda12.4")
		}, "libnccl2 2.21.1", "libnccl2 2.21.5", nil},
		{"dcgm", func(t *testing.T, r string) {
			dpkgVersion(t, r, "datacenter-gpu-manager-4-core", "1:4.6.0-1", "1:4.5.0-1")
		}, "datacenter-gpu-manager-4-core 4.5.0", "datacenter-gpu-manager-4-core 4.6.0", nil},
		{"container_toolkit", func(t *testing.T, r string) {
			dpkgVersion(t, r, "nvidia-container-toolkit", "1.17.8-1", "1.17.7-1")
		}, "nvidia-container-toolkit 1.17.7", "nvidia-container-toolkit 1.17.8", nil},
		// The case: Docker's shm back to 64M and its ulimits gone.
		{"docker_daemon", func(t *testing.T, r string) {
			p := filepath.Join(r, "etc/docker/daemon.json")
			var cfg map[string]any
			b, _ := os.ReadFile(p)
			if err := json.Unmarshal(b, &cfg); err != nil {
				t.Fatal(err)
			}
			cfg["default-shm-size"] = "64M"
			delete(cfg, "default-ulimits")
			b, _ = json.Marshal(cfg)
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "default-shm-size=64MiB, default-ulimits.memlock=(none), default-ulimits.stack=(none)", "default-shm-size=16GiB, default-ulimits.memlock=unlimited, default-ulimits.stack=64MiB", nil},
		{"shm", func(t *testing.T, r string) {
			edit(t, r, "etc/fstab", "size=50%", "size=64M")
		}, "fstab=size=64M", "fstab=size=50%", nil},
		// NUMA balancing switched back on at run time.
		{"sysctl", func(t *testing.T, r string) {
			edit(t, r, "proc/sys/kernel/numa_balancing", "0", "1")
		}, "kernel.numa_balancing=1", "kernel.numa_balancing=0", nil},
		{"hugepages", func(t *testing.T, r string) {
			edit(t, r, "proc/meminfo", "HugePages_Total:   1024", "HugePages_Total:      0")
		}, "count=0", "count=1024", nil},
		{"kernel_cmdline", func(t *testing.T, r string) {
			edit(t, r, "etc/default/grub.d/90-gpuform.cfg", " iommu=pt", " iommu=on")
		}, "args=iommu=on", "args=iommu=pt", nil},
		{"limits", func(t *testing.T, r string) {
			edit(t, r, "etc/security/limits.d/90-gpuform.conf", "memlock unlimited", "memlock 65536")
		}, "memlock=64MiB", "memlock=unlimited", nil},
		{"cpu_governor", func(t *testing.T, r string) {
			edit(t, r, "sys/devices/system/cpu/cpu7/cpufreq/scaling_governor", "performance", "powersave")
		}, "governor=performance,powersave", "governor=performance", nil},
		{"nccl_conf", func(t *testing.T, r string) {
			edit(t, r, "etc/nccl.conf", "NCCL_IB_HCA=mlx5_0,", "NCCL_IB_HCA=mlx5_1,")
			// mlx5_0, GPU 0's NIC, left out: bind.nccl_conf says so too.
		}, "NCCL_IB_HCA=mlx5_1,", "NCCL_IB_HCA=mlx5_0,", []string{"bind.nccl_conf"}},
		// A hand edit moves GPU 5's jobs to the other socket.
		{"binding", func(t *testing.T, r string) {
			edit(t, r, "etc/gpuform/binding.json", "\"pci\": \"0000:c3:00.0\",\n      \"numa_node\": 1,\n      \"cpus\": \"56-111,168-223\"", "\"pci\": \"0000:c3:00.0\",\n      \"numa_node\": 0,\n      \"cpus\": \"0-55,112-167\"")
		}, "gpu.5=numa 0 (0-55,112-167), nic mlx5_9 (ibp192s0)", "gpu.5=numa 1 (56-111,168-223), nic mlx5_9 (ibp192s0)", []string{"bind.file"}},
		// A hand edit gives GPU 5 the other socket's cores in Slurm.
		{"gres_conf", func(t *testing.T, r string) {
			edit(t, r, "etc/slurm/gres.conf", "File=/dev/nvidia5 Cores=56-111", "File=/dev/nvidia5 Cores=0-55")
		}, "gpu.5=Type=h100_sxm5_80gb File=/dev/nvidia5 Cores=0-55", "gpu.5=Type=h100_sxm5_80gb File=/dev/nvidia5 Cores=56-111", nil},
	}
	hosts := []string{"sim://hgx-h100-stale/converged"}
	for _, c := range cases {
		root := filepath.Join(state, "hgx-h100-stale@"+c.resource)
		copyRoot(t, converged, root)
		c.drift(t, root)
		hosts = append(hosts, "sim://hgx-h100-stale/"+c.resource)
	}
	hostsVar := `hosts=["` + strings.Join(hosts, `","`) + `"]`

	code, checks, out := verifyJSON(t, env, "-var", hostsVar, dir)
	if code != ExitReport {
		t.Errorf("verify: exit %d, want 2", code)
	}
	planned := plannedChanges(t, env, "-var", hostsVar, dir)
	if specFailed, other := failedIDs(checks[hosts[0]]); len(checks[hosts[0]]) == 0 || specFailed != nil || other != nil || planned[hosts[0]] != nil {
		t.Errorf("converged host: verify failed %v %v, plan changes %v\n%s", specFailed, other, planned[hosts[0]], out)
	}
	for i, c := range cases {
		host := hosts[i+1]
		t.Run(c.resource, func(t *testing.T) {
			specFailed, other := failedIDs(checks[host])
			if diff := cmp.Diff([]string{"spec." + c.resource}, specFailed); diff != "" {
				t.Errorf("spec.* failures (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.also, other); diff != "" {
				t.Errorf("other failures (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{c.resource}, planned[host]); diff != "" {
				t.Errorf("plan changes (-want +got):\n%s", diff)
			}
			for _, chk := range checks[host] {
				if chk.ID == "spec."+c.resource && (!strings.Contains(chk.Observed, c.observed) || !strings.Contains(chk.Expected, c.expected) || chk.Message == "") {
					t.Errorf("%s: observed %q, expected %q (%s); want them to contain %q and %q", chk.ID, chk.Observed, chk.Expected, chk.Message, c.observed, c.expected)
				}
			}
		})
	}
}

// TestVerifyRebootPending: apply installs a new driver on a node whose
// rollout may not reboot it. Verify fails spec.reboot_pending, naming the
// release installed and the one loaded, and nvml.driver_version says why
// the loaded driver differs; every resource itself is in place.
func TestVerifyRebootPending(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := "testdata/planapply"
	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK || !strings.Contains(out, "1 reboot pending") {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	code, hosts, out := verifyJSON(t, env, dir)
	checks := hosts["sim://hgx-h100-stale"]
	specFailed, other := failedIDs(checks)
	if code != ExitReport || !cmp.Equal(specFailed, []string{"spec.reboot_pending"}) {
		t.Fatalf("exit %d, spec.* failures %v\n%s", code, specFailed, out)
	}
	for _, c := range checks {
		switch c.ID {
		case "spec.reboot_pending":
			if !strings.Contains(c.Observed, "driver 550.127.08 installed, 535.183.06 loaded") || !strings.Contains(c.Message, "reboot") {
				t.Errorf("%s: %q (%s)", c.ID, c.Observed, c.Message)
			}
		case "nvml.driver_version":
			if c.Status != "fail" || !strings.Contains(c.Message, "550.127.08 is installed and loads at the next boot") {
				t.Errorf("%s: %s %q", c.ID, c.Status, c.Message)
			}
		case "host.fabric_manager", "host.peermem":
			if c.Status != "fail" || !strings.Contains(c.Message, "at the next boot (spec.reboot_pending)") {
				t.Errorf("%s: %s %q", c.ID, c.Status, c.Message)
			}
		}
	}
	// Fabric manager and peermem wait for the new module too, and say so.
	if !cmp.Equal(other, []string{"host.fabric_manager", "host.peermem", "nvml.driver_version"}) {
		t.Errorf("other failures: %v", other)
	}
	// The text report shows it to a person too.
	if _, text, _ := runCLIEnv(t, env, "verify", dir); !strings.Contains(text, "FAIL   spec.reboot_pending") {
		t.Errorf("text report:\n%s", text)
	}
}

// TestVerifyRequiredTools: a tier that cannot run its tool fails the gate
// unless the spec marks the tool optional (or, for DCGM, installs none);
// then the check is a skip, counted in the summary line. The README's CI
// command on examples/ci-preflight (optional = ["dcgm"]) passes that way,
// its nccl-tests run left to the full tier as not run.
func TestVerifyRequiredTools(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	src, err := os.ReadFile("../../examples/ci-preflight/main.gpuform.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), `optional = ["dcgm"]`) {
		t.Fatal(`examples/ci-preflight no longer marks dcgm optional`)
	}
	withOptional := func(list string) string {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), strings.Replace(string(src), `optional = ["dcgm"]`, "optional = "+list, 1))
		return dir
	}

	// The README's CI example, as written.
	junit := filepath.Join(t.TempDir(), "verify.xml")
	code, out, errOut := runCLIEnv(t, env, "verify", "-tier", "quick", "-format", "junit", "-out", junit, "../../examples/ci-preflight")
	if code != ExitOK || !strings.Contains(out, "0 failed, 0 errors, 1 skipped, 1 not run") {
		t.Errorf("README CI example: exit %d\n%s%s", code, out, errOut)
	}

	// No dcgmi and nothing optional: a spec that installs no DCGM lets
	// the quick tier skip it, saying so; one that pins DCGM fails it (and
	// spec.dcgm, the package apply would install).
	code, hosts, out := verifyJSON(t, env, "-tier", "quick", withOptional("[]"))
	if _, other := failedIDs(hosts["sim://dgx-a100"]); code != ExitOK || len(other) != 0 || !strings.Contains(out, "dcgm: optional, the spec installs no DCGM") {
		t.Errorf("dcgm not installed by the spec: exit %d, failed %v\n%s", code, other, out)
	}
	pinned := withOptional("[]")
	pinnedSrc, err := os.ReadFile(filepath.Join(pinned, "main.gpuform.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	pinnedSrc = []byte(strings.Replace(string(pinnedSrc), `node "preflight" {`, "module \"stack\" {\n  source = \"gpuform/stack-cuda12-8\"\n}\n\nnode \"preflight\" {\n  dcgm {\n    version = module.stack.dcgm_version\n  }\n", 1))
	writeFile(t, filepath.Join(pinned, "main.gpuform.hcl"), string(pinnedSrc))
	code, hosts, out = verifyJSON(t, env, "-tier", "quick", pinned)
	if drift, other := failedIDs(hosts["sim://dgx-a100"]); code != ExitReport || !cmp.Equal(other, []string{"dcgm.diag"}) || !cmp.Equal(drift, []string{"spec.dcgm"}) {
		t.Errorf("dcgm pinned: exit %d, failed %v and %v\n%s", code, drift, other, out)
	}

	// No nccl-tests binary on the full tier (the sim node runs the
	// command on this machine, where all_reduce_perf is not installed).
	code, hosts, out = verifyJSON(t, env, "-tier", "full", "-allow-local", withOptional(`["dcgm"]`))
	if _, other := failedIDs(hosts["sim://dgx-a100"]); code != ExitReport || !cmp.Equal(other, []string{"nccl.allreduce"}) {
		t.Errorf("nccl-tests required: exit %d, failed %v\n%s", code, other, out)
	}
	code, text, errOut := runCLIEnv(t, env, "verify", "-tier", "full", "-allow-local", withOptional(`["dcgm", "nccl_tests"]`))
	if code != ExitOK || !strings.Contains(text, "the spec marks nccl_tests optional") || !strings.Contains(text, "0 failed, 0 errors, 2 skipped.") {
		t.Errorf("nccl-tests optional: exit %d\n%s%s", code, text, errOut)
	}
}
