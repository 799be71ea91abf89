package sim_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
)

// The mpirun stand-in replays the real 2-node H100 NDR capture, byte for
// byte the file the nccltest parser tests read, with the given hosts'
// rank lines; a run that includes hgx-h100-slownic (one NIC at 200 Gb/s)
// has half the busbw, one without it the capture's.
func TestMpirunReplaysCapture(t *testing.T) {
	state := t.TempDir()
	roots := map[string]string{}
	for _, h := range []string{"sim://hgx-h100-converged/n1", "sim://hgx-h100-converged/n2", "sim://hgx-h100-slownic/n3"} {
		root, err := sim.MaterializeHost(h, state)
		if err != nil {
			t.Fatal(err)
		}
		roots[h] = root
	}
	capture, err := os.ReadFile("../verify/nccltest/testdata/all_reduce_perf-16xH100-2node-ib-srun-label-check0-degraded.txt")
	if err != nil {
		t.Fatal(err)
	}
	embedded, err := os.ReadFile(roots["sim://hgx-h100-converged/n1"] + "/usr/share/gpuform-sim/nccl-tests/all_reduce_perf-16xH100-2node-ib.txt")
	if err != nil || !bytes.Equal(capture, embedded) {
		t.Fatalf("the simulated node's capture is not the real one byte for byte (%v)", err)
	}
	tr := sim.New("sim://hgx-h100-converged/n1", roots["sim://hgx-h100-converged/n1"])
	tests := map[string]struct {
		hosts   string
		busbw   float64
		failure string
	}{
		"healthy pair":           {hosts: "n1:8,n2:8", busbw: 155.56},
		"pair with the slow NIC": {hosts: "n1:8,n3:8", busbw: 77.78},
		"three nodes":            {hosts: "n1:8,n2:8,n3:8", busbw: 77.78},
		"unknown host":           {hosts: "n1:8,n9:8", failure: "Could not resolve hostname n9"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			res := run(t, tr, "exec mpirun -np 16 -H "+tc.hosts+" -x NCCL_DEBUG=WARN all_reduce_perf -b 8M -e 8G -f 2 -g 1\n")
			if tc.failure != "" {
				if res.ExitCode == 0 || !strings.Contains(string(res.Stderr), tc.failure) {
					t.Fatalf("exit %d, stderr %q; want a failure naming %q", res.ExitCode, res.Stderr, tc.failure)
				}
				return
			}
			if res.ExitCode != 0 {
				t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
			}
			runs, err := nccltest.Parse(bytes.NewReader(res.Stdout))
			if err != nil || len(runs) != 1 {
				t.Fatalf("Parse: %d runs, %v\n%s", len(runs), err, res.Stdout)
			}
			v := nccltest.Judge(runs[0], 0)
			if !v.Pass || v.Size != 8<<30 || v.BusBW < tc.busbw-0.01 || v.BusBW > tc.busbw+0.01 {
				t.Errorf("verdict %+v, want a pass with busbw %.2f at 8G\n%s", v, tc.busbw, res.Stdout)
			}
			perHost := map[string]int{}
			for _, d := range runs[0].Devices {
				perHost[d.Host]++
			}
			for _, hs := range strings.Split(tc.hosts, ",") {
				h, _, _ := strings.Cut(hs, ":")
				if perHost[h] != 8 {
					t.Errorf("%s has %d ranks, want 8: %v", h, perHost[h], perHost)
				}
			}
		})
	}
}
