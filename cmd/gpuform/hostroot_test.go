package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/report"
)

// specChecks are the spec.* checks of a one-host report, by ID.
func specChecks(t *testing.T, out string) map[string]verify.CheckResult {
	t.Helper()
	var doc report.Document
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Hosts) != 1 {
		t.Fatalf("report holds %d hosts, want 1", len(doc.Hosts))
	}
	got := map[string]verify.CheckResult{}
	for _, c := range doc.Hosts[0].Checks {
		if strings.HasPrefix(c.ID, "spec.") {
			got[c.ID] = c
		}
	}
	return got
}

// verify --local -host-root DIR, as a pod with the node's / mounted at
// DIR runs it (-engine kubernetes, the health DaemonSet), judges the
// spec's packages and files from DIR, not from the machine it runs on:
// with a simulated node's root as DIR its spec.* checks are the ones
// verify reports for that node itself, and a package changed in the root
// fails its check.
func TestVerifyLocalHostRoot(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	dir, _ := kubeEngineSpec(t, "sim://hgx-h100-converged")
	env := []string{"GPUFORM_SIM_STATE=" + state}
	// The simulated node verified as itself: the reference.
	_, out, errOut := runCLIEnv(t, env, "verify", "-allow-local", "-format", "json", dir)
	want := specChecks(t, out)
	if len(want) < 5 {
		t.Fatalf("the reference run has %d spec.* checks, want the spec's resources\n%s", len(want), errOut)
	}
	root := simRoot(t, state, "hgx-h100-converged")
	local := func() map[string]verify.CheckResult {
		t.Helper()
		_, out, errOut := runCLIEnv(t, env, "verify", "--local", "-mock-nvml", "dgxh100", "-host-root", root, "-format", "json", dir)
		if out == "" {
			t.Fatalf("no report:\n%s", errOut)
		}
		return specChecks(t, out)
	}
	if diff := cmp.Diff(want, local()); diff != "" {
		t.Errorf("verify --local -host-root ROOT differs from verify of the node itself (-node +host-root):\n%s", diff)
	}
	// The root drifts: libnccl2 upgraded by hand, and the sysctl file
	// edited. The host-root read sees both; a read of this machine's own
	// files would not see the root at all.
	edit := func(rel, old, repl string) {
		t.Helper()
		p := filepath.Join(root, rel)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), old) {
			t.Fatalf("%s has no %q:\n%s", rel, old, b)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, repl, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	edit("var/lib/dpkg/status", "Version: 2.21.5-1+cuda12.4\nDescription: libnccl2\n", "Version: 9.99.9-1+cuda12.4\nDescription: libnccl2\n")
	edit("etc/sysctl.d/90-gpuform.conf", "kernel.numa_balancing = 0", "kernel.numa_balancing = 1")
	if want["spec.sysctl"].Status != verify.StatusPass || strings.Contains(want["spec.nccl"].Observed, "9.99.9") {
		t.Fatalf("before the drift: spec.sysctl %+v, spec.nccl %+v", want["spec.sysctl"], want["spec.nccl"])
	}
	got := local()
	if c := got["spec.nccl"]; c.Status != verify.StatusFail || !strings.Contains(c.Observed, "packages=libnccl2 9.99.9,") {
		t.Errorf("spec.nccl with libnccl2 9.99.9 in the root's dpkg database: %+v", c)
	}
	if c := got["spec.sysctl"]; c.Status != verify.StatusFail || !strings.Contains(c.Message, "sysctl drifted from the spec: content") {
		t.Errorf("spec.sysctl with kernel.numa_balancing = 1 in the root's /etc/sysctl.d: %+v", c)
	}
	for id, c := range got {
		if id == "spec.nccl" || id == "spec.sysctl" {
			continue
		}
		if diff := cmp.Diff(want[id], c); diff != "" {
			t.Errorf("%s changed with only libnccl2 and the sysctl file drifted (-before +after):\n%s", id, diff)
		}
	}
	// Refused: without --local, and a mount that is not there.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"verify", "-host-root", root, dir}, "-host-root works only with --local"},
		{[]string{"verify", "--local", "-host-root", "host", dir}, "-host-root host: not an absolute path"},
		{[]string{"verify", "--local", "-mock-nvml", "dgxh100", "-host-root", filepath.Join(root, "nonexistent"), dir}, "no such directory: mount the node's / there"},
	} {
		code, _, errOut := runCLIEnv(t, env, c.args...)
		if code != ExitFailed || !strings.Contains(errOut, c.want) {
			t.Errorf("gpuform %s: exit %d, want 1 and %q\n%s", strings.Join(c.args, " "), code, c.want, errOut)
		}
	}
}
