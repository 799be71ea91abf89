package lockfile

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

func node(driver string, pkgs map[string]string, toolkits ...string) *facts.Node {
	n := &facts.Node{Packages: facts.Packages{Installed: map[string]facts.Package{}}}
	if driver != "" {
		n.Driver = &facts.Driver{Version: driver}
	}
	for name, v := range pkgs {
		n.Packages.Installed[name] = facts.Package{Version: v}
	}
	for _, t := range toolkits {
		n.CUDAToolkits = append(n.CUDAToolkits, facts.CUDAToolkit{Version: t})
	}
	return n
}

func TestResolve(t *testing.T) {
	src := `node "train" {
  hosts = ["gpu[1-2]"]
  driver {
    version        = "580"
    fabric_manager = true
  }
  cuda { version = "12.8" }
  nccl { version = "2.25.1" }
}`
	cfg, diags := spec.LoadFiles(map[string][]byte{"a.gpuform.hcl": []byte(src)}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	same := map[string]*facts.Node{
		// A reboot is pending on gpu2: the installed package is what counts.
		"gpu1": node("580.95.05", map[string]string{"nvidia-open": "580.95.05-1"}, "12.8.1", "12.4.1"),
		"gpu2": node("535.183.06", map[string]string{"nvidia-open": "580.95.05-1"}, "12.8.1"),
	}
	lock, diags := Resolve(testKB, cfg, same)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	got := map[string]string{}
	for c, v := range lock.Nodes["train"] {
		got[c.LockName()] = v.V.Raw
	}
	want := map[string]string{"driver": "580.95.05", "fabric_manager": "580.95.05", "cuda": "12.8.1", "nccl": "2.25.1"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}

	// Drift: the hosts run different CUDA 12.8 releases.
	drift := map[string]*facts.Node{
		"gpu1": node("580.95.05", nil, "12.8.1"),
		"gpu2": node("580.95.05", nil, "12.8.0"),
	}
	_, diags = Resolve(testKB, cfg, drift)
	if len(diags) != 1 || !strings.Contains(diags[0].Detail, "12.8.0 on gpu2; 12.8.1 on gpu1") || diags[0].Subject.Start.Line != 7 {
		t.Errorf("drift: %v", diags)
	}
}

func TestPackageVersion(t *testing.T) {
	n := node("", map[string]string{"libnccl2": "2.25.1-1+cuda12.8", "datacenter-gpu-manager-4-cuda12": "1:4.6.0-1"})
	if v := packageVersion(n, "libnccl2"); v != "2.25.1" {
		t.Errorf("libnccl2 = %q", v)
	}
	if v := packageVersion(n, "datacenter-gpu-manager-4-cuda12"); v != "4.6.0" {
		t.Errorf("dcgm = %q", v)
	}
}
