//go:build linux

package gres_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gpuform/gpuform/internal/slurmtest"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/gres"
	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/spec"
)

// slurmSpec is a two-GPU node whose GPUs sit on two NUMA nodes.
const slurmSpec = `
node "n" {
  hosts    = ["gpu001"]
  hardware = {
    gpu_model    = "H100 SXM5 80GB"
    gpu_count    = 2
    interconnect = "nvswitch"
    cpu_sockets  = 2
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
    gres = true
  }
}
`

// TestSlurmdLoadsGRES has a real slurmd load the gres.conf gpuform renders
// and checks that Slurm reports the GPUs with the CPUs gpuform gave them.
// The machine's CPUs are split into two NUMA nodes (Slurm counts this
// machine's CPUs as cores, one thread each, as slurmtest configures it),
// so Cores= indexes Slurm's cores as on a real two-node host. The File=
// paths gain a prefix where the test creates the device files slurmd
// stats; every other byte is what apply writes.
func TestSlurmdLoadsGRES(t *testing.T) {
	ncpu := runtime.NumCPU()
	if ncpu < 2 {
		t.Skip("two CPUs are needed to give each GPU a NUMA node of its own")
	}
	half := ncpu / 2
	span := func(a, b int) string {
		if a == b {
			return strconv.Itoa(a)
		}
		return strconv.Itoa(a) + "-" + strconv.Itoa(b)
	}
	f := &facts.Node{NUMA: []facts.NUMANode{{ID: 0, CPUs: span(0, half-1)}, {ID: 1, CPUs: span(half, ncpu-1)}}}
	cfg, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte(slurmSpec)}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	c, err := gres.Render(cfg.Nodes[0], f)
	if err != nil {
		t.Fatal(err)
	}
	text := c.Text()
	// Each line parsed into its fields (a comment line as "#"): the GPUs
	// in index order, each with its device file, the Slurm cores of its
	// NUMA node (one thread per core: the CPU numbers do not pair up as
	// hyperthread halves) and its NVLink to the other GPU over NVSwitch.
	var lines []map[string]string
	for line := range strings.Lines(text) {
		line = strings.TrimSuffix(line, "\n")
		if c, ok := strings.CutPrefix(line, "# "); ok {
			lines = append(lines, map[string]string{"#": c})
			continue
		}
		fields := map[string]string{}
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			fields[k] = v
		}
		lines = append(lines, fields)
	}
	wantLines := []map[string]string{
		{"#": "GPU 0: NUMA node 0, CPUs " + span(0, half-1)},
		{"Name": "gpu", "Type": "h100_sxm5_80gb", "File": "/dev/nvidia0", "Cores": span(0, half-1), "Links": "-1,1"},
		{"#": "GPU 1: NUMA node 1, CPUs " + span(half, ncpu-1)},
		{"Name": "gpu", "Type": "h100_sxm5_80gb", "File": "/dev/nvidia1", "Cores": span(half, ncpu-1), "Links": "1,-1"},
	}
	if diff := cmp.Diff(wantLines, lines); diff != "" {
		t.Fatalf("rendered gres.conf (-want +got):\n%s\n%s", diff, text)
	}
	dev, err := os.MkdirTemp("", "gfgres")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dev) })
	for i := range 2 {
		p := filepath.Join(dev, "dev", "nvidia"+strconv.Itoa(i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		// A character device as the driver's are (this one is
		// /dev/null's): slurmd refuses anything else.
		if err := syscall.Mknod(p, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Fatal(err)
		}
	}
	conf := strings.ReplaceAll(text, "File=/dev/", "File="+dev+"/dev/")
	cl := slurmtest.Start(t, slurmtest.Options{Gres: "gpu:h100_sxm5_80gb:2", GresConf: conf})

	// What slurmd read from the file, GPU by GPU.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/sbin/slurmd", "-G", "-N", cl.Node, "-f", cl.Conf)
	cmd.Env = append(os.Environ(), cl.Env())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("slurmd -G: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "error:") {
		t.Errorf("slurmd -G found errors in the gres.conf:\n%s", out)
	}
	// What verify reads from slurmd -G on an AutoDetect node: each GPU's
	// device file and cores, as parsed from the same output.
	got, errs := gres.ParseSlurmdG(string(out))
	if len(got) != 2 || len(errs) != 0 {
		t.Fatalf("ParseSlurmdG: %+v, errors %q\n%s", got, errs, out)
	}
	for i, d := range got {
		if d.Name != "gpu" || d.Type != "h100_sxm5_80gb" || d.File != dev+"/dev/nvidia"+strconv.Itoa(i) || d.Cores != c.Lines[i].Fields[2][len("Cores="):] {
			t.Errorf("ParseSlurmdG GPU %d: %+v, want the rendered line %s", i, d, c.Lines[i])
		}
	}
	for i, cores := range []string{span(0, half-1), span(half, ncpu-1)} {
		want := regexp.MustCompile(`Name=gpu Type=h100_sxm5_80gb Count=1 Index=` + strconv.Itoa(i) + ` .*File=` + regexp.QuoteMeta(dev) + `/dev/nvidia` + strconv.Itoa(i) + ` Cores=` + cores + ` .*Links=`)
		if !want.Match(out) {
			t.Errorf("slurmd -G does not show GPU %d on cores %s:\n%s", i, cores, out)
		}
	}
	// verify's slurm.gres on this node: RunSlurmdG runs slurmd -G through
	// a transport as on any host, and its report is judged against the
	// binds (the device files lose the test's prefix first). Binds that
	// swap the GPUs' NUMA nodes fail both.
	s := verify.RunSlurmdG(ctx, local.New("localhost", local.WithEnv(map[string]string{"SLURM_CONF": cl.Conf})))
	if s.Failure != "" || len(s.GRES) != 2 {
		t.Fatalf("RunSlurmdG: %+v", s)
	}
	for i := range s.GRES {
		s.GRES[i].File = strings.TrimPrefix(s.GRES[i].File, dev)
	}
	for _, tc := range []struct {
		binds map[int]int
		want  verify.Status
	}{{map[int]int{0: 0, 1: 1}, verify.StatusPass}, {map[int]int{0: 1, 1: 0}, verify.StatusFail}} {
		res := verify.Check(verify.Expectation{KB: testKB, SlurmAutodetect: true, NUMANode: tc.binds}, nil, verify.HostFacts{Facts: f, Slurmd: &s})
		n := 0
		for _, r := range res {
			if strings.HasPrefix(r.ID, "slurm.gres[") {
				n++
				if r.Status != tc.want {
					t.Errorf("binds %v: %s is %s (%s), want %s", tc.binds, r.ID, r.Status, r.Message, tc.want)
				}
			}
		}
		if n != 2 {
			t.Errorf("binds %v: %d slurm.gres results, want 2: %+v", tc.binds, n, res)
		}
	}
	// What the controller holds: both GPUs, of the type slurm.conf names,
	// tied to the socket of their cores.
	node := cl.Scontrol("show", "node", cl.Node)
	if !regexp.MustCompile(`Gres=gpu:h100_sxm5_80gb:2\(S:0\)`).MatchString(node) {
		t.Errorf("scontrol show node does not report the GPUs bound to socket 0:\n%s", node)
	}
}
