package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/transport"
)

// TestPlanPreflight plans, on simulated nodes, specs that assume of a host
// what it does not have: plan must refuse the host (exit 1) with what was
// expected and what was found, instead of a plan apply would fail on.
func TestPlanPreflight(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		host    string
		node    string
		edit    map[string]string // files rewritten in the materialised root
		want    []string
		notWant []string
	}{
		{
			name: "gpu count",
			host: "sim://gh200",
			node: `module "hgx" { source = "gpuform/hgx-h100-8gpu" }
node "n" {
  hosts    = ["sim://gh200"]
  hardware = module.hgx.hardware
  sysctl   = { "vm.swappiness" = "1" }
}`,
			want: []string{
				`GPUs: expected 8 H100 SXM5 80GB GPUs (hardware "HGX H100 8-GPU (DGX H100 layout)"); found 1 NVIDIA GPU on the PCI bus (1× GH200 Grace Hopper Superchip)`,
				"GPU model: expected H100 SXM5 80GB",
				"found GH200 Grace Hopper Superchip at 0009:01:00.0",
			},
		},
		{
			name: "gpu model",
			host: "sim://hgx-h100-stale",
			node: `module "dgx" { source = "gpuform/dgx-a100" }
node "n" {
  hosts    = ["sim://hgx-h100-stale"]
  hardware = module.dgx.hardware
  sysctl   = { "vm.swappiness" = "1" }
}`,
			want:    []string{"GPU model: expected A100 SXM4 80GB", "found H100 SXM5 80GB (HGX/DGX H100) at 0000:1b:00.0, 0000:43:00.0"},
			notWant: []string{"GPUs: expected"},
		},
		{
			name: "numa binds",
			host: "sim://hgx-h100-stale",
			node: `node "n" {
  hosts = ["sim://hgx-h100-stale"]
  sysctl = { "vm.swappiness" = "1" }
  numa {
    bind {
      gpus = [0, 1]
      node = 3
    }
  }
}`,
			want: []string{"NUMA nodes: expected NUMA node 3 for GPUs 0, 1 (numa bind); found 2 NUMA nodes (0, 1)"},
		},
		{
			name: "gpu_nic",
			host: "sim://hgx-h100-stale",
			node: `node "n" {
  hosts = ["sim://hgx-h100-stale"]
  sysctl = { "vm.swappiness" = "1" }
  affinity {
    gpu_nic  = { 0 = "mlx5_0", 1 = "mlx5_77" }
  }
}`,
			want:    []string{`NICs: expected NIC "mlx5_77" for GPU 1 (affinity gpu_nic); found no RDMA device or network interface of that name; the host has mlx5_0, mlx5_1`},
			notWant: []string{`"mlx5_0" for`},
		},
		{
			name: "cpu architecture",
			host: "sim://hgx-h100-stale",
			node: `node "n" {
  hosts = ["sim://hgx-h100-stale"]
  driver { version = "550" }
}`,
			edit: map[string]string{"proc/sys/kernel/arch": "ppc64le\n"},
			want: []string{"CPU architecture: expected one NVIDIA publishes driver packages for (x86_64 or aarch64); found ppc64le"},
		},
		{
			name: "operating system",
			host: "sim://hgx-h100-stale",
			node: `node "n" {
  hosts = ["sim://hgx-h100-stale"]
  nccl { version = "2.21.5" }
}`,
			edit: map[string]string{"etc/os-release": "ID=alpine\nVERSION_ID=3.20\nPRETTY_NAME=\"Alpine Linux v3.20\"\n"},
			want: []string{"operating system: expected Debian/Ubuntu (apt) or the RHEL family (dnf), the systems gpuform installs packages on; found Alpine Linux v3.20"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			root, err := sim.MaterializeHost(tc.host, state)
			if err != nil {
				t.Fatal(err)
			}
			for p, content := range tc.edit {
				if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), tc.node+"\n")
			env := []string{"GPUFORM_SIM_STATE=" + state}
			code, out, errOut := runPA(t, env, "", "plan", "-detailed-exitcode", dir)
			if code != ExitFailed {
				t.Fatalf("plan: exit %d, want 1\n%s\n%s", code, out, errOut)
			}
			for _, w := range append([]string{"the spec cannot be applied to this host:"}, tc.want...) {
				if !strings.Contains(out, w) {
					t.Errorf("plan lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("plan has %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "Plan:") && !strings.Contains(out, "Plan: 0 to add, 0 to change, 0 to destroy.") {
				t.Errorf("a refused host still shows changes:\n%s", out)
			}
		})
	}
}

// TestPlanPreflightOtherHostsStillPlan: one host the spec cannot apply to
// fails alone; the other is planned, and the JSON plan is not applyable.
// TestPlanPreflightVerificationOnly: a spec that manages nothing (the CI
// gate's verify-only spec, whose hardware is a DGX A100) plans no change
// on a node of other hardware and is not refused: it applies nothing, and
// the hardware it expects is verify's to check.
func TestPlanPreflightVerificationOnly(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	code, out, errOut := runPA(t, env, "", "plan", "-detailed-exitcode", "-var", `hosts=["sim://hgx-h100-stale"]`, "../../examples/ci-preflight")
	if code != ExitOK || strings.Contains(out, "cannot be applied") {
		t.Fatalf("plan of a verification-only spec: exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestPlanPreflightOtherHostsStillPlan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `module "hgx" { source = "gpuform/hgx-h100-8gpu" }
node "n" {
  hosts    = ["sim://hgx-h100-stale", "sim://gh200"]
  hardware = module.hgx.hardware
  sysctl   = { "vm.swappiness" = "1" }
}
`)
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	code, out, errOut := runPA(t, env, "", "plan", "-json", dir)
	if code != ExitFailed {
		t.Fatalf("plan -json: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	var doc struct {
		Applyable bool `json:"applyable"`
		Hosts     []struct {
			Host            string            `json:"host"`
			Error           string            `json:"error"`
			ResourceChanges []json.RawMessage `json:"resource_changes"`
		} `json:"hosts"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Hosts) != 2 {
		t.Fatalf("plan JSON: %v\n%s", err, out)
	}
	if doc.Applyable {
		t.Error("applyable is true with a host the spec cannot apply to")
	}
	for _, h := range doc.Hosts {
		switch h.Host {
		case "sim://hgx-h100-stale":
			if h.Error != "" || len(h.ResourceChanges) == 0 {
				t.Errorf("%s: error %q, %d changes; want a plan", h.Host, h.Error, len(h.ResourceChanges))
			}
		case "sim://gh200":
			if !strings.Contains(h.Error, "GPUs: expected 8 H100 SXM5 80GB GPUs") || len(h.ResourceChanges) != 0 {
				t.Errorf("%s: error %q, %d changes; want the GPU count refused", h.Host, h.Error, len(h.ResourceChanges))
			}
		}
	}
}

// TestPlanPreflightOverSSH plans an 8-GPU spec against a real host over a
// real sshd on loopback, logged in as a user that is not root and without
// become: this machine has no HGX board, and apply could not change it.
// plan must refuse the host and say both, not print a plan.
func TestPlanPreflightOverSSH(t *testing.T) {
	opts := sshtest.Options{Env: map[string]string{"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}}
	if os.Geteuid() == 0 {
		// Run as root, the test drops every session to nobody, as a
		// login to an unprivileged account would be.
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			sshtest.Missing(t, "needs setpriv (util-linux) to log in as a user that is not root")
		}
		drop := filepath.Join(t.TempDir(), "as-nobody")
		writeFile(t, drop, "#!/bin/sh\ncd /\nexec "+transport.Quote(setpriv)+" --reuid=65534 --regid=65534 --clear-groups /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"\n")
		if err := os.Chmod(drop, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Dir(drop), 0o755); err != nil {
			t.Fatal(err)
		}
		opts.ExtraConfig = []string{"ForceCommand " + drop}
	}
	srv := sshtest.Start(t, opts)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `module "hgx" { source = "gpuform/hgx-h100-8gpu" }
inventory "lab" {
  hosts = ["127.0.0.1"]
  user  = "`+srv.User+`"
  port  = `+strconv.Itoa(srv.Port)+`
}
node "train" {
  hosts    = inventory.lab
  hardware = module.hgx.hardware
  driver {
    version        = "580"
    fabric_manager = true
  }
}
`)
	code, out, errOut := runPA(t, nil, "", "plan", "-ssh-config", "none", "-identity", srv.UserKeyFile, "-known-hosts", srv.KnownHostsFile, dir)
	if code != ExitFailed {
		t.Fatalf("plan: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	for _, w := range []string{
		"the spec cannot be applied to this host:",
		`GPUs: expected 8 H100 SXM5 80GB GPUs (hardware "HGX H100 8-GPU (DGX H100 layout)"); found `,
		`privileges: expected root to apply: log in as root, or set become = "sudo" in the inventory`,
		", without become",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("plan lacks %q:\n%s\n%s", w, out, errOut)
		}
	}
	if strings.Contains(out, "Reboot required") || strings.Contains(out, "nvidia-fabricmanager") {
		t.Errorf("plan shows changes for a host it cannot apply to:\n%s", out)
	}
}
