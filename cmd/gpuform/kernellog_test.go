package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/slurmtest"
	"github.com/gpuform/gpuform/provision/sim"
)

// plantedNode materialises the simulated host in state, as verify would,
// and plants the fault lines no shipped profile carries.
func plantedNode(t *testing.T, host, state, faults string) string {
	t.Helper()
	root, err := sim.MaterializeHost(host, state)
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.PlantFaults(root, []byte(faults)); err != nil {
		t.Fatal(err)
	}
	return root
}

// TestVerifyKernelLogUnjudgedFailsHost (issue 27, seen 5): kernel.xid
// over more than 64 MiB of dmesg, or with dmesg refused, was skip, which
// the gate counted as passed, though docs/security.md says the host
// fails. On a node whose kernel log cannot be read (kernel
// dmesg=restricted on the converged node) or floods past what gpuform
// reads (kernel dmesg=flood on the Xid 79 node) verify now fails the host
// with kernel.xid an error that says why, and a non-zero exit.
func TestVerifyKernelLogUnjudgedFailsHost(t *testing.T) {
	for _, tc := range []struct {
		name, host, fault, message string
	}{
		{"dmesg refused", "sim://hgx-h100-converged", "kernel dmesg=restricted",
			"the kernel log could not be read, so no Xid was judged: dmesg: read kernel buffer failed: Operation not permitted"},
		{"dmesg past 64 MiB", "sim://hgx-h100-xid79", "kernel dmesg=flood",
			"the kernel log could not be read, so no Xid was judged: dmesg printed more than 64 MiB of Xid and SXid lines"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			plantedNode(t, tc.host, state, tc.fault)
			code, out, errOut := runCLIEnv(t, []string{"GPUFORM_SIM_STATE=" + state}, "verify", "-json", xid79Spec(t, tc.host))
			var doc struct {
				Hosts []struct {
					Checks []struct {
						ID, Status, Message string
						Remedy              *struct{ Action string }
					}
				}
				Summary struct {
					HostsFailed int `json:"hosts_failed"`
				}
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Hosts) != 1 {
				t.Fatalf("verify -json: exit %d, %v\n%s%s", code, err, out, errOut)
			}
			if code != ExitReport || doc.Summary.HostsFailed != 1 {
				t.Errorf("exit %d, %d hosts failed; want %d and the host failed", code, doc.Summary.HostsFailed, ExitReport)
			}
			found := false
			for _, c := range doc.Hosts[0].Checks {
				if c.ID != "kernel.xid" {
					continue
				}
				found = true
				if c.Status != "error" || !strings.HasPrefix(c.Message, tc.message) || c.Remedy == nil || c.Remedy.Action != "config" {
					t.Errorf("kernel.xid: %s %q, remedy %+v; want error %q", c.Status, c.Message, c.Remedy, tc.message)
				}
			}
			if !found {
				t.Errorf("no kernel.xid check:\n%s", out)
			}
			if tc.fault == "kernel dmesg=restricted" {
				// The converged node passes this spec (TestVerifyXid79RemedyThroughCLI): the log alone
				// fails it.
				for _, c := range doc.Hosts[0].Checks {
					if c.ID != "kernel.xid" && (c.Status == "fail" || c.Status == "error") {
						t.Errorf("%s %s: %q", c.ID, c.Status, c.Message)
					}
				}
			}
		})
	}
}

// TestSlurmHealthDrainsOnUnreadableKernelLog: health mode drains a node
// whose kernel log it cannot read, saying so in the reason: nothing was
// judged, so the node has not passed. The node's dmesg is the simulated
// one of a converged root with kernel dmesg=restricted, first on PATH.
func TestSlurmHealthDrainsOnUnreadableKernelLog(t *testing.T) {
	root, err := sim.Materialize("hgx-h100-converged", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.PlantFaults(root, []byte("kernel dmesg=restricted")); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	writeFile(t, filepath.Join(bin, "dmesg"), "#!/bin/sh\nGPUFORM_ROOT='"+root+"' exec '"+filepath.Join(root, filepath.FromSlash(sim.BinDir), "dmesg")+"' \"$@\"\n")
	if err := os.Chmod(filepath.Join(bin, "dmesg"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := slurmtest.Start(t, slurmtest.Options{NodeName: "gpu009"})
	cmd := healthCmd(c, healthSpec(t, `"gpu009"`, "  health {\n    max_drained_share = 1\n  }"), c.Node, filepath.Join(c.Dir, "health.json"), "-mock-nvml", "dgxh100")
	cmd.Env = append(cmd.Env, "PATH="+bin+":/usr/bin:/bin:/usr/sbin:/sbin")
	code, out, errOut := runHealth(t, cmd)
	state, reason := c.State()
	if code != ExitReport || !strings.Contains(state, "DRAIN") || !strings.HasPrefix(reason, "gpuform: health: kernel.xid: ") {
		t.Fatalf("exit %d, state %q reason %q\n%s%s", code, state, reason, out, errOut)
	}
	if !strings.Contains(out, "Operation not permitted") {
		t.Errorf("the report does not say why the log was not judged:\n%s", out)
	}
}
