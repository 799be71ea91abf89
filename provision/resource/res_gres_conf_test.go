package resource

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
)

const gresBody = `hardware = {
  gpu_model = "H100 SXM5 80GB"
  gpu_count = 2
  interconnect = "nvswitch"
  cpu_sockets = 2
}
numa {
  bind {
    gpus = [0]
    node = 0
  }
  bind {
    gpus = [1]
    node = 1
  }
}
slurm {
  gres = %s
}`

func gresNode(t *testing.T) *facts.Node {
	t.Helper()
	f := debianNode()
	f.NUMA = []facts.NUMANode{{ID: 0, CPUs: "0-3,8-11"}, {ID: 1, CPUs: "4-7,12-15"}}
	return f
}

// withGRES puts content at /etc/slurm/gres.conf in f, as the probe reads it.
func withGRES(f *facts.Node, content string) {
	sum := sha256.Sum256([]byte(content))
	f.ConfigFiles = map[string]facts.ConfigFile{"/etc/slurm/gres.conf": {Exists: true, Data: []byte(content), SHA256: hex.EncodeToString(sum[:]), Size: len(content), Mode: "-rw-r--r--", UID: "0", GID: "0"}}
}

func TestGRESConf(t *testing.T) {
	body := strings.Replace(gresBody, "%s", "true", 1)
	f := gresNode(t)
	got, _ := diffAll(t, loadNode(t, body), f)
	c := got[GRESConf]
	wantGPU1 := "Type=h100_sxm5_80gb File=/dev/nvidia1 Cores=4-7 Links=1,-1"
	if c.Action != Create || c.After["gpu.1"] != StringVal(wantGPU1) || len(c.Steps) != 2 {
		t.Fatalf("absent gres.conf: %+v", c)
	}
	written := c.Steps[0].Input
	if !strings.Contains(written, "\nName=gpu "+wantGPU1+"\n") || !strings.HasPrefix(written, gresBegin) || !strings.HasSuffix(written, gresEnd+"\n") {
		t.Fatalf("written gres.conf:\n%s", written)
	}
	if got := callOf(t, c.Steps[1]).String(); got != "systemd_unit.sh restart-if-active slurmd.service" {
		t.Errorf("the write does not restart slurmd: %s", got)
	}

	// Written: nothing to do.
	withGRES(f, written)
	got, _ = diffAll(t, loadNode(t, body), f)
	if c := got[GRESConf]; c.Action != NoOp {
		t.Errorf("written gres.conf: %+v", c)
	}

	// The site's own lines around gpuform's block are kept, and the plan
	// says so; the block is rewritten where it is.
	site := "# site GRES\nName=mps Count=200 File=/dev/nvidia0\n"
	withGRES(f, site+strings.Replace(written, "Cores=4-7", "Cores=0-3", 1)+"NodeName=other Name=nic Count=1\n")
	got, _ = diffAll(t, loadNode(t, body), f)
	c = got[GRESConf]
	if c.Action != Update || c.Before["gpu.1"] != StringVal(strings.Replace(wantGPU1, "Cores=4-7", "Cores=0-3", 1)) || c.After["gpu.1"] != StringVal(wantGPU1) || c.After["other_lines"] != StringVal("2 kept") {
		t.Fatalf("changed block among the site's lines: %+v", c)
	}
	if w := c.Steps[0].Input; w != site+written+"NodeName=other Name=nic Count=1\n" {
		t.Errorf("rewritten gres.conf:\n%s", w)
	}

	// A file of the site's without gpuform's block: the block is added
	// after its lines, which the plan counts.
	withGRES(f, "Name=mps Count=100 File=/dev/nvidia0")
	got, _ = diffAll(t, loadNode(t, body), f)
	c = got[GRESConf]
	if c.Action != Update || c.Before["other_lines"] != StringVal("") || c.After["other_lines"] != StringVal("1 kept") || c.Steps[0].Input != "Name=mps Count=100 File=/dev/nvidia0\n"+written {
		t.Fatalf("site's file without the block: %+v\n%s", c, c.Steps[0].Input)
	}

	// The site's lines describe the GPUs too (or gpuform's end line was
	// deleted, so which lines are whose is unknown): no plan, and why.
	for clash, want := range map[string]string{
		"name=GPU File=/dev/nvidia[0-1]\n": "line 1 (name=GPU File=/dev/nvidia[0-1]) describe GPUs outside gpuform's lines",
		"AutoDetect=nvml\n":                "line 1 (AutoDetect=nvml) describe GPUs outside gpuform's lines",
		"Name=mps Count=100\n" + strings.TrimSuffix(written, gresEnd+"\n"): `gpuform's block has no "# END gpuform" line`,
	} {
		withGRES(f, clash)
		rs, _, err := Build(testKB, loadNode(t, body), f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Name() != GRESConf {
				continue
			}
			if _, err := r.Diff(f); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%q: err = %v", clash, err)
			}
		}
	}

	// A NUMA node the host lacks: nothing written, a warning says why.
	f.ConfigFiles = nil
	f.NUMA = f.NUMA[:1]
	got, warnings := diffAll(t, loadNode(t, body), f)
	if _, ok := got[GRESConf]; ok || !strings.Contains(strings.Join(warnings, "\n"), "/etc/slurm/gres.conf not written: GPU 1 is bound to NUMA node 1, which this host does not have") {
		t.Errorf("missing NUMA node: %+v, warnings %q", got[GRESConf], warnings)
	}

	// AutoDetect: one line, no hardware needed.
	f.ConfigFiles = nil
	auto := "slurm {\n gres = true\n gres_autodetect = \"nvml\"\n}"
	got, _ = diffAll(t, loadNode(t, auto), f)
	if c := got[GRESConf]; c.Action != Create || c.After["AutoDetect"] != StringVal("nvml") || !strings.Contains(c.Steps[0].Input, "\nAutoDetect=nvml\n") {
		t.Errorf("autodetect: %+v", c)
	}

	// No slurm block: gres.conf is not gpuform's business.
	got, _ = diffAll(t, loadNode(t, `cpu_governor = "performance"`), f)
	if _, ok := got[GRESConf]; ok {
		t.Errorf("gres.conf planned without slurm { gres }")
	}
}
