package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGRESPlanApply plans and applies a node's gres.conf on a simulated
// HGX H100 host that already has a gres.conf of the site's: plan says the
// site's line is kept, apply writes the lines provision/gres renders for
// this hardware (its golden file) after it, the next plan has nothing to
// do, and a site line that describes the GPUs too stops the plan.
func TestGRESPlanApply(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := "testdata/gres"
	root := filepath.Join(state, "hgx-h100-stale@gres")
	// The first plan builds the simulated host.
	if code, out, errOut := runPA(t, env, "", "plan", dir); code != ExitOK {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	conf := filepath.Join(root, "etc/slurm/gres.conf")
	site := "# The site's MPS shares.\nName=mps Count=200 File=/dev/nvidia0\n"
	if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := runPA(t, env, "", "plan", "-detailed-exitcode", dir)
	for _, want := range []string{
		"~ gres_conf",
		// issue 30 item 8: the plan names the file it writes.
		"# gres_conf (/etc/slurm/gres.conf) will be updated in-place",
		`+ gpu.5       = "Type=h100_sxm5_80gb File=/dev/nvidia5 Cores=56-111 Links=1,1,1,1,1,-1,1,1"`,
		`+ other_lines = "1 kept"`,
	} {
		if code != ExitReport || !strings.Contains(out, want) {
			t.Fatalf("plan: exit %d, want 2 and %q\n%s%s", code, want, out, errOut)
		}
	}

	if code, out, errOut := runPA(t, env, "", "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	golden, err := os.ReadFile("../../provision/gres/testdata/hgx-h100-8gpu.gres.conf")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	begin := "# BEGIN gpuform, spec \"gres\" (the lines up to \"# END gpuform\"; Slurm reads the other lines as they are). Change the spec, not this file.\n"
	if want := site + begin + string(golden) + "# END gpuform\n"; string(got) != want {
		t.Fatalf("gres.conf after apply:\n%s\nwant:\n%s", got, want)
	}

	code, out, _ = runPA(t, env, "", "plan", "-detailed-exitcode", dir)
	if code != ExitOK || !strings.Contains(out, "No changes.") {
		t.Fatalf("plan after apply: exit %d, want 0\n%s", code, out)
	}

	// The site describes the GPUs itself as well: slurmd would count them
	// twice, so nothing is planned and the line is named.
	if err := os.WriteFile(conf, append([]byte("Name=gpu File=/dev/nvidia[0-7]\n"), got...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runPA(t, env, "", "plan", dir)
	if code == ExitOK || !strings.Contains(out+errOut, "line 1 (Name=gpu File=/dev/nvidia[0-7]) describe GPUs outside gpuform's lines") {
		t.Fatalf("plan with the site's own GPU line: exit %d\n%s%s", code, out, errOut)
	}
}
