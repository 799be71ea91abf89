package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/nicirq"
)

const nicIRQSpec = `
node "hgx" {
  hosts = ["sim://hgx-h100-stale"]
  affinity {
    nic_irq_affinity = true
    mtu              = { mlx5_0 = 4092, mlx5_6 = 4092 }
  }
}
`

// TestNICIRQAffinity: on the simulated HGX H100 (every NIC interrupt
// allowed on all 224 CPUs, irqbalance installed with the operator's own
// arguments) plan shows each NIC's IRQs moving to its NUMA node's CPUs;
// apply pins them, writes the boot unit and enables it, and adds
// gpuform's policy script to IRQBALANCE_ARGS without touching any other
// line; a second plan has nothing to do. An IRQ moved away afterwards
// (irqbalance before the ban, an operator) is planned back. Turned off,
// apply removes the script and the unit and gives irqbalance's file back
// byte for byte.
func TestNICIRQAffinity(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	env := []string{"GPUFORM_SIM_STATE=" + state}
	dir := t.TempDir()
	specFile := filepath.Join(dir, "main.gpuform.hcl")
	writeFile(t, specFile, nicIRQSpec)
	if code, out, errOut := runCLIEnv(t, env, "plan", dir); code != ExitOK {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	root := simRoot(t, state, "hgx-h100-stale")
	const operator = "# irqbalance settings\n#IRQBALANCE_ONESHOT=\nIRQBALANCE_ARGS=\"--hintpolicy=ignore\"\n  # keep this\nENABLED=\"1\"\n"
	irqbalance := filepath.Join(root, "etc/default/irqbalance")
	writeFile(t, irqbalance, operator)
	if err := os.MkdirAll(filepath.Join(root, "lib/systemd/system"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "lib/systemd/system/irqbalance.service"), "[Service]\nEnvironmentFile=-/etc/default/irqbalance\nExecStart=/usr/sbin/irqbalance --foreground $IRQBALANCE_ARGS\n")

	code, out, errOut := runCLIEnv(t, env, "plan", "-no-color", dir)
	for _, want := range []string{
		`~ nic_irq {`,
		// mlx5_0 sits on NUMA node 0, mlx5_6 on node 1.
		`~ mlx5_0 (0000:18:00.0) = "16 IRQs: 16 on 0-223" -> "16 IRQs: 16 on 0-55,112-167"`,
		`~ mlx5_6 (0000:9a:00.0) = "16 IRQs: 16 on 0-223" -> "16 IRQs: 16 on 56-111,168-223"`,
		`~ nic_irq_unit {`,
		`~ enabled = "not-found" -> "enabled"`,
		`# irqbalance (/etc/default/irqbalance) will be updated in-place, restarts irqbalance.service`,
		`+ policy script = "` + nicirq.File + `"`,
	} {
		if !strings.Contains(oneSpace(out), want) {
			t.Errorf("plan lacks %s", want)
		}
	}
	if t.Failed() || code != ExitOK {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}

	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	for irq, want := range map[string]string{"200": "0-55,112-167", "215": "0-55,112-167", "264": "56-111,168-223", "391": "56-111,168-223"} {
		b, err := os.ReadFile(filepath.Join(root, "proc/irq", irq, "smp_affinity_list"))
		if err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("IRQ %s: %q %v, want %s", irq, b, err, want)
		}
	}
	if st, err := os.Stat(filepath.Join(root, nicirq.File)); err != nil || st.Mode().Perm()&0o111 == 0 {
		t.Errorf("%s: %v (irqbalance runs it: it must be executable)", nicirq.File, err)
	}
	wants := filepath.Join(root, "etc/systemd/system/multi-user.target.wants", nicirq.Unit)
	if _, err := os.Lstat(wants); err != nil {
		t.Errorf("%s not enabled: %v", nicirq.Unit, err)
	}
	wantIRQBalance := strings.Replace(operator, `IRQBALANCE_ARGS="--hintpolicy=ignore"`, `IRQBALANCE_ARGS="--hintpolicy=ignore --policyscript=`+nicirq.File+`"`, 1)
	if b, _ := os.ReadFile(irqbalance); string(b) != wantIRQBalance {
		t.Errorf("irqbalance settings:\n%q\nwant\n%q", b, wantIRQBalance)
	}
	if code, out, errOut := runCLIEnv(t, env, "plan", "-detailed-exitcode", dir); code != ExitOK {
		t.Errorf("plan after apply: exit %d\n%s%s", code, out, errOut)
	}

	nicChecks := func() map[string]verifyCheck {
		t.Helper()
		_, hosts, out := verifyJSON(t, env, dir)
		got := map[string]verifyCheck{}
		for _, c := range hosts["sim://hgx-h100-stale"] {
			if c.ID == "nic.irq_affinity" || c.ID == "nic.mtu" {
				got[c.ID] = c
			}
		}
		if len(got) != 2 {
			t.Fatalf("verify lacks the NIC checks:\n%s", out)
		}
		return got
	}
	for id, c := range nicChecks() {
		if c.Status != "pass" {
			t.Errorf("verify after apply: %s %+v", id, c)
		}
	}

	// One IRQ moved off the node: plan puts it back and verify fails it;
	// one node's interface left at IPoIB's 2K-MTU default fails nic.mtu.
	writeFile(t, filepath.Join(root, "proc/irq/201/smp_affinity_list"), "0-223\n")
	writeFile(t, filepath.Join(root, "sys/devices/pci0000:97/0000:97:01.0/0000:98:00.0/0000:99:00.0/0000:9a:00.0/net/ibp154s0/mtu"), "2044\n")
	code, out, errOut = runCLIEnv(t, env, "plan", "-no-color", "-detailed-exitcode", dir)
	if code != ExitReport || !strings.Contains(oneSpace(out), `~ mlx5_0 (0000:18:00.0) = "16 IRQs: 15 on 0-55,112-167, 1 on 0-223" -> "16 IRQs: 16 on 0-55,112-167"`) {
		t.Errorf("plan after an IRQ moved: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		`~ nic_mtu {`,
		`~ mlx5_6 (ibp154s0) = "2044" -> "4092"`,
		"mtu: set with `ip link set` until the next reboot only",
	} {
		if !strings.Contains(oneSpace(out+errOut), want) {
			t.Errorf("plan with an MTU off lacks %s\n%s%s", want, out, errOut)
		}
	}
	got := nicChecks()
	if c := got["nic.irq_affinity"]; c.Status != "fail" || !strings.Contains(c.Message, "mlx5_0 (0000:18:00.0) (NUMA node 0, CPUs 0-55,112-167): IRQ 201 (0-223)") {
		t.Errorf("nic.irq_affinity after an IRQ moved: %+v", c)
	}
	if c := got["nic.mtu"]; c.Status != "fail" || !strings.Contains(c.Message, "mlx5_6 (ibp154s0) has MTU 2044, the spec says 4092") {
		t.Errorf("nic.mtu with one interface at 2044: %+v", c)
	}

	// Turned off: gpuform's files go, irqbalance's file is the operator's again.
	writeFile(t, specFile, strings.Replace(nicIRQSpec, "nic_irq_affinity = true", "nic_irq_affinity = false", 1))
	if code, out, errOut := runCLIEnv(t, env, "apply", "-auto-approve", dir); code != ExitOK {
		t.Fatalf("apply turned off: exit %d\n%s%s", code, out, errOut)
	}
	for _, p := range []string{nicirq.File, nicirq.UnitFile, "/etc/systemd/system/multi-user.target.wants/" + nicirq.Unit} {
		if _, err := os.Lstat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("%s still there after turning nic_irq_affinity off: %v", p, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "sys/class/net/ibp154s0/mtu")); string(b) != "4092\n" {
		t.Errorf("ibp154s0's MTU after apply: %q, want 4092", b)
	}
	if b, _ := os.ReadFile(irqbalance); string(b) != operator {
		t.Errorf("irqbalance settings after turning off:\n%q\nwant the operator's\n%q", b, operator)
	}
	if code, out, errOut := runCLIEnv(t, env, "plan", "-detailed-exitcode", dir); code != ExitOK {
		t.Errorf("plan after turning off: exit %d\n%s%s", code, out, errOut)
	}
}

// oneSpace collapses runs of spaces, so plan lines compare without the
// column padding that depends on the longest attribute name.
func oneSpace(s string) string { return regexp.MustCompile(` +`).ReplaceAllString(s, " ") }
