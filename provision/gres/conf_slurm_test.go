//go:build linux

package gres_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/slurmtest"
	"github.com/gpuform/gpuform/provision/gres"
)

// TestConfDeclaresGPUsAsSlurmdReads holds gres.ParseConf to real slurmd
// (22.05 here): for each spelling an admin may use, slurmd -G reports GPUs
// from the file exactly when gpuform says the file declares them for the
// node, so gpuform never adds its lines beside GPUs slurmd already counts.
func TestConfDeclaresGPUsAsSlurmdReads(t *testing.T) {
	// Device files as the driver's are (these are /dev/null's): slurmd
	// stats File= and refuses anything else.
	dev, err := os.MkdirTemp("", "gfgres")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dev) })
	if err := os.MkdirAll(filepath.Join(dev, "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"nvidia0", "nvidia1"} {
		if err := syscall.Mknod(filepath.Join(dev, "dev", n), syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Fatal(err)
		}
	}
	files := "File=" + dev + "/dev/nvidia[0-1]"
	cl := slurmtest.Start(t, slurmtest.Options{Gres: "gpu:h100:2", GresConf: "Name=gpu Type=h100 " + files + "\n"})
	cases := []string{
		"Name=gpu Type=h100 " + files,
		"Name = gpu Type = h100 " + files,
		`Name="gpu" Type="h100" ` + files,
		"NAME=GPU TYPE=h100 " + strings.Replace(files, "File=", "FILE=", 1),
		"name=gpu\ttype=h100  " + files + "  # the site's GPUs",
		"Name=gpu Type=h100 \\\n  " + files,
		"NodeName=" + cl.Node + " Name=gpu Type=h100 " + files,
		"NodeName=" + strings.TrimRight(cl.Node, "0123456789") + "[000-999] Name=gpu Type=h100 " + files,
		// Lines that give this node no GPU.
		"NodeName=other[01-04] Name=gpu Type=h100 " + files,
		"# Name=gpu Type=h100 " + files,
		"Name=mps Count=200",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, line := range cases {
		if err := os.WriteFile(filepath.Join(filepath.Dir(cl.Conf), "gres.conf"), []byte(line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, "/usr/sbin/slurmd", "-G", "-N", cl.Node, "-f", cl.Conf)
		cmd.Env = append(os.Environ(), cl.Env())
		out, _ := cmd.CombinedOutput()
		got, _ := gres.ParseSlurmdG(string(out))
		slurmd := false
		for _, d := range got {
			// slurmd keeps the case it read ("Name=GPU") and counts it as gpu.
			slurmd = slurmd || strings.EqualFold(d.Name, "gpu")
		}
		ours := false
		for _, l := range gres.ParseConf(line + "\n") {
			ours = ours || l.DeclaresGPUs(cl.Node)
		}
		if ours != slurmd {
			t.Errorf("%q: gpuform says declares GPUs %v, slurmd -G %v:\n%s", line, ours, slurmd, out)
		}
	}
}
