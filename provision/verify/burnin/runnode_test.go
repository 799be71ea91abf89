package burnin

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/nodesh/nodeshtest"
)

func TestLoadScriptsShellcheck(t *testing.T) {
	nodeshtest.Shellcheck(t, map[string]string{
		"load.sh":          loadScript,
		"aer_read.sh":      aerScript,
		"sent/load.sh":     nodesh.Script(loadScript, []string{"14400", "5000", SampleQuery}),
		"sent/aer_read.sh": nodesh.Script(aerScript, nil),
	})
}

// replayNode makes a node that replays a burn-in: stand-ins for dcgmi
// (a published dcgmi diag capture), dcgmproftester12 (the load, which
// takes no time: the scaled clock) and nvidia-smi (the modelled samples),
// and a root with one NVIDIA function's AER counters, which aerAfter
// sets after the load when not empty.
func replayNode(t *testing.T, dcgmCapture, samples, aerAfter string, noLoad bool) *local.Transport {
	t.Helper()
	bin, root := t.TempDir(), t.TempDir()
	dev := filepath.Join(root, "sys/bus/pci/devices/0000:18:00.0")
	if err := os.MkdirAll(dev, 0o755); err != nil {
		t.Fatal(err)
	}
	aer := filepath.Join(dev, "aer_dev_correctable")
	write := func(p, s string, mode os.FileMode) {
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dev, "vendor"), "0x10de\n", 0o644)
	write(aer, "RxErr 0\nBadTLP 0\nTOTAL_ERR_COR 2\n", 0o644)
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	write(filepath.Join(bin, "dcgmi"), "#!/bin/sh\ncat '"+abs(filepath.Join("..", "dcgm", "testdata", dcgmCapture))+"'\n", 0o755)
	after := ""
	if aerAfter != "" {
		after = "printf 'TOTAL_ERR_COR " + aerAfter + "\\n' >'" + aer + "'\n"
	}
	if !noLoad {
		write(filepath.Join(bin, "dcgmproftester12"), "#!/bin/sh\nsleep 0.2\n"+after, 0o755)
	}
	write(filepath.Join(bin, "nvidia-smi"), "#!/bin/sh\ncat '"+abs(filepath.Join("testdata", samples))+"'\nexec sleep 30\n", 0o755)
	return local.New("n", local.WithEnv(map[string]string{"GPUFORM_ROOT": root, "PATH": bin + ":/usr/bin:/bin"}))
}

// TestRunNodeReplay runs the burn-in's node side over a transport on a
// replayed node (4 hours on a scaled clock: seconds), healthy and with
// each fault the replay can carry: a throttling GPU, a rising AER
// counter, a DCGM failure, a node without a load generator.
func TestRunNodeReplay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o := NodeOptions{Duration: time.Second, DCGMTimeout: 10 * time.Second}
	cases := []struct {
		name, dcgm, samples, aer string
		noLoad                   bool
		check                    string
		want                     Status
	}{
		{"healthy", "dcgmi-diag-r4-dcgm2x-blacklist-era-healthy-gcm.txt", "load-4xH100-4h-healthy.modelled.csv", "", false, "", StatusPass},
		{"thermal throttling", "dcgmi-diag-r4-dcgm2x-blacklist-era-healthy-gcm.txt", "load-4xH100-4h-gpu3-thermal-throttle.modelled.csv", "", false, "burnin.thermal", StatusFail},
		{"AER rose", "dcgmi-diag-r4-dcgm2x-blacklist-era-healthy-gcm.txt", "load-4xH100-4h-healthy.modelled.csv", "7", false, "burnin.counters", StatusFail},
		{"DCGM failed", "dcgmi-diag-r2-dcgm3.3.0-8xGA102-pcie-fail-all.txt", "load-4xH100-4h-healthy.modelled.csv", "", false, "burnin.dcgm", StatusFail},
		{"no load generator", "dcgmi-diag-r4-dcgm2x-blacklist-era-healthy-gcm.txt", "load-4xH100-4h-healthy.modelled.csv", "", true, "burnin.load", StatusFail},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tr := replayNode(t, c.dcgm, c.samples, c.aer, c.noLoad)
			r, err := RunNode(ctx, tr, o)
			if err != nil {
				t.Fatal(err)
			}
			fs := Evaluate(r, Limits{})
			rec := NewRecord(node, t0, t0.Add(o.Duration), o.Duration, fs)
			if c.check == "" {
				if !rec.Passed || len(r.Samples) != 52 {
					t.Errorf("healthy replay: %d samples, findings %+v", len(r.Samples), fs)
				}
				return
			}
			if rec.Passed {
				t.Errorf("record passed with %s", c.name)
			}
			found := false
			for _, f := range fs {
				if f.Check == c.check && f.Status == c.want {
					found = true
				}
			}
			if !found {
				t.Errorf("no %s %s in %+v", c.check, c.want, fs)
			}
		})
	}
}
