package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sensitiveSpec writes a spec whose variable "secret" is sensitive and set
// from a variables file (so that a saved plan needs only the file's path),
// with body as the node's body. It returns the spec directory and the
// -var-file argument.
func sensitiveSpec(t *testing.T, secret, body string) (dir, varFile string) {
	t.Helper()
	dir = t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `variable "secret" {
  type      = string
  sensitive = true
}
node "n" {
  hosts = ["sim://hgx-h100-stale"]
`+body+`}
`)
	varFile = filepath.Join(t.TempDir(), "secret.gpuvars.hcl")
	writeFile(t, varFile, "secret = \""+secret+"\"\n")
	return dir, varFile
}

// noSecret fails the test when any of outs contains one of the secrets.
func noSecret(t *testing.T, what string, outs []string, secrets ...string) {
	t.Helper()
	for _, o := range outs {
		for _, s := range secrets {
			if strings.Contains(o, s) {
				t.Errorf("%s prints the sensitive value %q:\n%s", what, s, o)
			}
		}
	}
}

// TestSensitiveSysctlInPlan: a 3-character sensitive value in a sysctl is
// hidden by the text plan, plan -json, the saved plan file and apply, and
// still reaches the node.
func TestSensitiveSysctlInPlan(t *testing.T) {
	t.Parallel()
	const secret = "qzx"
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir, vf := sensitiveSpec(t, secret, `  sysctl = { "vm.swappiness" = "1", "net.core.rmem_max" = var.secret }
`)

	code, out, errOut := runPA(t, env, "", "plan", "-var-file", vf, dir)
	if code != ExitOK || !strings.Contains(out, `net.core.rmem_max = (sensitive value)`) || !strings.Contains(out, `"1"`) {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	noSecret(t, "plan", []string{out, errOut}, secret)

	code, out, errOut = runPA(t, env, "", "plan", "-json", "-var-file", vf, dir)
	var doc struct {
		Hosts []struct {
			ResourceChanges []struct {
				Resource       string
				After          map[string]any
				AfterSensitive map[string]bool `json:"after_sensitive"`
			} `json:"resource_changes"`
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitOK {
		t.Fatalf("plan -json: exit %d %v\n%s%s", code, err, out, errOut)
	}
	found := false
	for _, rc := range doc.Hosts[0].ResourceChanges {
		if rc.Resource == "sysctl" {
			found = rc.After["net.core.rmem_max"] == "(sensitive value)" && rc.AfterSensitive["net.core.rmem_max"] && !rc.AfterSensitive["vm.swappiness"]
		}
	}
	if !found {
		t.Errorf("plan -json does not mark the sysctl sensitive:\n%s", out)
	}
	noSecret(t, "plan -json", []string{out, errOut}, secret)

	planFile := filepath.Join(t.TempDir(), "p.plan")
	code, out, errOut = runPA(t, env, "", "plan", "-out", planFile, "-var-file", vf, dir)
	b, err := os.ReadFile(planFile)
	if code != ExitOK || err != nil {
		t.Fatalf("plan -out: exit %d %v\n%s%s", code, err, out, errOut)
	}
	if st, _ := os.Stat(planFile); st.Mode().Perm() != 0o600 {
		t.Errorf("plan file mode %v, want 0600", st.Mode().Perm())
	}
	noSecret(t, "the saved plan", []string{string(b), out, errOut}, secret)

	code, out, errOut = runPA(t, env, "", "apply", planFile)
	if code != ExitOK {
		t.Fatalf("apply of the saved plan: exit %d\n%s%s", code, out, errOut)
	}
	noSecret(t, "apply", []string{out, errOut}, secret)
	conf, err := os.ReadFile(filepath.Join(state, "hgx-h100-stale", "etc/sysctl.d/90-gpuform.conf"))
	if err != nil || !strings.Contains(string(conf), "net.core.rmem_max = "+secret) {
		t.Errorf("the value did not reach the node: %v\n%s", err, conf)
	}

	// Now the live value is the secret: the next plan hides it too.
	code, out, errOut = runPA(t, env, "", "plan", "-json", "-var-file", vf, dir)
	noSecret(t, "plan after apply", []string{out, errOut}, secret)
	if code != ExitOK || !strings.Contains(out, `"before_sensitive"`) {
		t.Errorf("plan after apply: exit %d, want the live value hidden\n%s%s", code, out, errOut)
	}
}

// TestSensitiveDerivedValueInValidate: a value computed from a sensitive
// variable is hidden in validate's errors, text and JSON.
func TestSensitiveDerivedValueInValidate(t *testing.T) {
	dir, vf := sensitiveSpec(t, "q1x", `  driver {
    version = upper(var.secret)
  }
  cpu_governor = "x${var.secret}"
`)
	for _, args := range [][]string{{"validate"}, {"validate", "-json"}, {"lint"}, {"plan"}} {
		code, out, errOut := runCLI(t, "", append(args, "-var-file", vf, dir)...)
		if code == ExitOK || !strings.Contains(out+errOut, "Invalid version") || !strings.Contains(out+errOut, "(sensitive value)") {
			t.Errorf("%v: exit %d, want an invalid version error\n%s%s", args, code, out, errOut)
		}
		noSecret(t, strings.Join(args, " "), []string{out, errOut}, "Q1X", "q1x", "xq1x")
	}
}

// TestSensitiveDriverInVerify: verify's expected value for a sensitive
// driver version is hidden, and so is what the node showed for it.
func TestSensitiveDriverInVerify(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	// The stale node runs 535.183.06; the pin fails the check.
	dir, vf := sensitiveSpec(t, "550.54.15", `  driver {
    version = var.secret
  }
`)
	code, out, errOut := runCLIEnv(t, env, "verify", "-var-file", vf, dir)
	if code != ExitReport || !strings.Contains(out, "nvml.driver_version") || !strings.Contains(out, "expected (sensitive value)") {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errOut)
	}
	noSecret(t, "verify", []string{out, errOut}, "550.54.15")

	code, out, errOut = runCLIEnv(t, env, "verify", "-format", "json", "-var-file", vf, dir)
	var doc struct {
		Hosts []struct {
			Checks []struct{ ID, Status, Observed, Expected string }
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != ExitReport {
		t.Fatalf("verify -json: exit %d %v\n%s%s", code, err, out, errOut)
	}
	checked := false
	for _, c := range doc.Hosts[0].Checks {
		if c.ID == "nvml.driver_version" {
			checked = c.Status == "fail" && c.Expected == "(sensitive value)" && c.Observed == "(sensitive value)"
		}
	}
	if !checked {
		t.Errorf("nvml.driver_version is not a hidden failure:\n%s", out)
	}
	noSecret(t, "verify -format json", []string{out, errOut}, "550.54.15")
}

// TestSensitiveValueInLint: a lint finding that quotes a value derived
// from a sensitive variable shows (sensitive value) instead.
func TestSensitiveValueInLint(t *testing.T) {
	dir, vf := sensitiveSpec(t, "q9z", `  container {
    images = ["nvcr.io/nvidia/privatething:${var.secret}"]
  }
`)
	for _, format := range []string{"text", "json", "sarif"} {
		code, out, errOut := runCLI(t, "", "lint", "-format", format, "-min-severity", "info", "-var-file", vf, dir)
		if code != ExitReport || !strings.Contains(out, "(sensitive value)") {
			t.Errorf("lint -format %s: exit %d, want a finding about the image\n%s%s", format, code, out, errOut)
		}
		noSecret(t, "lint -format "+format, []string{out, errOut}, "q9z")
	}
}
