package sim_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/gpuform/gpuform/provision/bench/tool"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
)

// argv joins an argv from package tool into a script line; the test's
// arguments need no quoting.
func argv(a []string) string { return strings.Join(a, " ") }

// nvbandwidthHost runs the host<->GPU testcases on a node and returns the
// per-GPU values of each, parsed by the real parser.
func nvbandwidthHost(t *testing.T, tr transport.Transport, prefix string) map[string][]float64 {
	t.Helper()
	res := run(t, tr, prefix+argv(tool.NvbandwidthArgs("host_to_device_memcpy_ce", "device_to_host_memcpy_ce")))
	if res.ExitCode != 0 {
		t.Fatalf("nvbandwidth: exit %d\n%s%s", res.ExitCode, res.Stdout, res.Stderr)
	}
	ms, err := tool.ParseNvbandwidth(strings.NewReader(string(res.Stdout)))
	if err != nil {
		t.Fatalf("parsing the stand-in's output: %v\n%s", err, res.Stdout)
	}
	got := map[string][]float64{}
	for _, m := range ms {
		if len(m.Rows) != 1 || len(m.Cols) != 8 {
			t.Fatalf("%s: %dx%d matrix, want 1x8", m.Testcase, len(m.Rows), len(m.Cols))
		}
		got[m.Testcase] = m.GBps[0]
	}
	return got
}

// TestBenchToolsReplayRealCaptures: the measurement stand-ins of the HGX
// H100 profiles print outputs that the bench parsers read, with the
// numbers of the real captures.
func TestBenchToolsReplayRealCaptures(t *testing.T) {
	for _, profile := range []string{"hgx-h100-stale", "hgx-h100-converged"} {
		t.Run(profile, func(t *testing.T) {
			tr, _ := newNode(t, profile)
			host := nvbandwidthHost(t, tr, "")
			if h2d := host["host_to_device_memcpy_ce"]; len(h2d) != 8 || h2d[5] != 55.36 || h2d[7] != 55.33 {
				t.Errorf("host_to_device_memcpy_ce = %v", h2d)
			}
			if d2h := host["device_to_host_memcpy_ce"]; len(d2h) != 8 || d2h[5] != 55.25 {
				t.Errorf("device_to_host_memcpy_ce = %v", d2h)
			}

			// Every testcase with a capture, GPU to GPU and local.
			res := run(t, tr, argv(tool.NvbandwidthArgs("device_to_device_memcpy_read_ce", "device_local_copy")))
			ms, err := tool.ParseNvbandwidth(strings.NewReader(string(res.Stdout)))
			if err != nil || len(ms) != 2 {
				t.Fatalf("d2d + local: %v %d\n%s", err, len(ms), res.Stdout)
			}
			if v, ok := ms[0].Value(3, 2); !ok || v != 395.23 {
				t.Errorf("d2d read 3->2 = %v %v", v, ok)
			}
			if v, ok := ms[1].Value(0, 3); !ok || v != 1519.60 {
				t.Errorf("device_local_copy GPU 3 = %v %v", v, ok)
			}

			// fio: one job, both directions.
			res = run(t, tr, argv(tool.FioArgs("/data/bench.fio", "read", 1024)))
			fr, err := tool.ParseFioJSON(strings.NewReader(string(res.Stdout)))
			if err != nil || len(fr) != 1 || fr[0].ReadMBps < 348 || fr[0].ReadMBps > 349 {
				t.Errorf("fio: %+v %v", fr, err)
			}

			// all_reduce_perf at 2, 4 and 8 GPUs, through nccltest's parser.
			for g, want := range map[int]float64{2: 358.38, 4: 355.89, 8: 473.60} {
				res := run(t, tr, argv(tool.AllReducePerfArgs(g)))
				runs, err := nccltest.Parse(strings.NewReader(string(res.Stdout)))
				if err != nil || len(runs) != 1 || res.ExitCode != 0 {
					t.Fatalf("-g %d: exit %d, %v\n%s", g, res.ExitCode, err, res.Stdout)
				}
				last, ok := runs[0].Largest()
				if !ok || last.OutOfPlace.BusBW != want || len(runs[0].Devices) != g {
					t.Errorf("-g %d: busbw %v at the largest size, %d devices; want %v, %d", g, last.OutOfPlace.BusBW, len(runs[0].Devices), want, g)
				}
			}
		})
	}
}

// TestNvbandwidthVisibleDevices: with CUDA_VISIBLE_DEVICES the stand-in
// shows only those GPUs, renumbered from 0 as CUDA does, so bench can
// measure one GPU at a time (GPU 5 of the degraded node alone).
func TestNvbandwidthVisibleDevices(t *testing.T) {
	tr, _ := newNode(t, "hgx-h100-degraded")
	res := run(t, tr, "CUDA_VISIBLE_DEVICES=5 "+argv(tool.NvbandwidthArgs("host_to_device_memcpy_ce")))
	ms, err := tool.ParseNvbandwidth(strings.NewReader(string(res.Stdout)))
	if err != nil || len(ms) != 1 || len(ms[0].Cols) != 1 || ms[0].GBps[0][0] != 27.68 || ms[0].SumGBps != 27.68 {
		t.Fatalf("GPU 5 alone: %+v %v\n%s", ms, err, res.Stdout)
	}
	res = run(t, tr, "CUDA_VISIBLE_DEVICES=2,7 "+argv(tool.NvbandwidthArgs("device_to_device_memcpy_read_ce")))
	ms, err = tool.ParseNvbandwidth(strings.NewReader(string(res.Stdout)))
	if err != nil || len(ms) != 1 || len(ms[0].Rows) != 2 || len(ms[0].Cols) != 2 {
		t.Fatalf("GPUs 2 and 7: %+v %v\n%s", ms, err, res.Stdout)
	}
	// The capture's [2][7] and [7][2] cells: 395.19 both.
	if v, _ := ms[0].Value(0, 1); v != 395.19 || ms[0].SumGBps != 790.38 {
		t.Errorf("GPUs 2 and 7: [0][1] %v, sum %v", v, ms[0].SumGBps)
	}
	if res := run(t, tr, "CUDA_VISIBLE_DEVICES=GPU-0f2e "+argv(tool.NvbandwidthArgs())); res.ExitCode == 0 {
		t.Errorf("UUIDs are not modelled, yet the stand-in ran:\n%s", res.Stdout)
	}
}

// TestBenchToolLimits: what the stand-ins do not have they say, rather
// than invent numbers, and they fail like the real tools on bad requests.
func TestBenchToolLimits(t *testing.T) {
	tr, _ := newNode(t, "hgx-h100-stale")
	tests := []struct {
		name, script, want string
	}{
		{"no 1-GPU capture", argv(tool.AllReducePerfArgs(1)), "no captured run with 1 GPU(s)"},
		{"more GPUs than visible", "CUDA_VISIBLE_DEVICES=0,1 " + argv(tool.AllReducePerfArgs(4)), "Test CUDA failure common.cu:1030 'invalid device ordinal'"},
		{"testcase without a capture", argv(tool.NvbandwidthArgs("all_to_host_memcpy_ce")), "no captured output for testcase all_to_host_memcpy_ce"},
		{"nvbandwidth -j", argv(tool.NvbandwidthJSONArgs("host_to_device_memcpy_ce")), "no captured -j output"},
		{"unknown RDMA device", argv(tool.IBWriteBWServerArgs("mlx5_99", 18600)), "Unable to find the Infiniband/RoCE device"},
		// mlx5_2 is a storage port whose link is down in the hardware layer.
		{"port down", argv(tool.IBWriteBWServerArgs("mlx5_2", 18601)), "Port number 1 state is Down"},
		{"no server", argv(tool.IBWriteBWClientArgs("mlx5_0", 18602, "localhost")), "Couldn't connect to localhost:18602"},
		{"NUMA node out of range", "numactl --cpunodebind=2 --membind=2 " + argv(tool.NvbandwidthArgs("host_to_device_memcpy_ce")), "node argument 2 is out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := run(t, tr, tt.script)
			if res.ExitCode == 0 || !strings.Contains(string(res.Stdout)+string(res.Stderr), tt.want) {
				t.Errorf("exit %d, want failure with %q\n%s%s", res.ExitCode, tt.want, res.Stdout, res.Stderr)
			}
		})
	}
	// perftest's client error parses as a failure.
	res := run(t, tr, argv(tool.IBWriteBWClientArgs("mlx5_0", 18603, "localhost"))+" 2>&1")
	if _, err := tool.ParseIBWriteBW(strings.NewReader(string(res.Stdout))); err == nil || !strings.Contains(err.Error(), "Couldn't connect") {
		t.Errorf("client without server parsed as %v", err)
	}
}

// TestBenchToolsOnlyWhereCaptured: profiles without captures have no
// measurement tools, as a node without the packages.
func TestBenchToolsOnlyWhereCaptured(t *testing.T) {
	for _, profile := range []string{"dgx-a100", "no-driver", "l40s-rocky9", "gh200"} {
		tr, _ := newNode(t, profile)
		for _, c := range []string{"nvbandwidth", "ib_write_bw", "fio", "all_reduce_perf"} {
			if res := run(t, tr, "PATH=${PATH%%:*} command -v "+c); res.ExitCode == 0 {
				t.Errorf("%s has %s: %s", profile, c, res.Stdout)
			}
		}
	}
	tr, _ := newNode(t, "hgx-h100-converged")
	for _, c := range []string{"nvbandwidth", "numactl", "ib_write_bw", "fio", "all_reduce_perf"} {
		if res := run(t, tr, "PATH=${PATH%%:*} command -v "+c); res.ExitCode != 0 {
			t.Errorf("hgx-h100-converged lacks %s", c)
		}
	}
}

// ibPair runs an ib_write_bw server and client between two RDMA devices of
// the node at once, as a loopback run on a real node, and parses both.
func ibPair(t *testing.T, tr transport.Transport, serverDev, clientDev string, port int) (server, client tool.RDMAResult) {
	t.Helper()
	var wg sync.WaitGroup
	var sres transport.Result
	var serr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		sres, serr = tr.Run(context.Background(), transport.Command{Script: argv(tool.IBWriteBWServerArgs(serverDev, port))})
	}()
	cres := run(t, tr, argv(tool.IBWriteBWClientArgs(clientDev, port, "localhost")))
	wg.Wait()
	if serr != nil || sres.ExitCode != 0 || cres.ExitCode != 0 {
		t.Fatalf("%s<-%s: server exit %d %v, client exit %d\n%s%s\n%s%s", serverDev, clientDev, sres.ExitCode, serr, cres.ExitCode, sres.Stdout, sres.Stderr, cres.Stdout, cres.Stderr)
	}
	s, err := tool.ParseIBWriteBW(strings.NewReader(string(sres.Stdout)))
	if err != nil {
		t.Fatalf("server output: %v\n%s", err, sres.Stdout)
	}
	c, err := tool.ParseIBWriteBW(strings.NewReader(string(cres.Stdout)))
	if err != nil {
		t.Fatalf("client output: %v\n%s", err, cres.Stdout)
	}
	return s, c
}

// TestDegradedProfile: hgx-h100-degraded differs from hgx-h100-stale
// exactly where stated: GPU 5's PCIe link width and host<->GPU copies, and
// mlx5_3's sysfs rate and RDMA write bandwidth; GPU-to-GPU and the other
// GPUs and NICs replay the same captures.
func TestDegradedProfile(t *testing.T) {
	stale, _ := newNode(t, "hgx-h100-stale")
	degraded, _ := newNode(t, "hgx-h100-degraded")

	// sysfs through the real facts probe.
	width := func(n *facts.Node, addr string) int {
		for _, d := range n.PCI {
			if d.Address == addr {
				return d.CurrentLinkWidth
			}
		}
		t.Fatalf("no PCI device %s", addr)
		return 0
	}
	rate := func(n *facts.Node, dev string) string {
		for _, d := range n.RDMA {
			if d.Name == dev && len(d.Ports) > 0 {
				return d.Ports[0].Rate
			}
		}
		t.Fatalf("no RDMA device %s", dev)
		return ""
	}
	sn, dn := probe(t, stale), probe(t, degraded)
	const gpu5, gpu4 = "0000:c3:00.0", "0000:9d:00.0"
	if width(sn, gpu5) != 16 || width(dn, gpu5) != 8 || width(dn, gpu4) != 16 {
		t.Errorf("link width GPU 5: stale %d, degraded %d; GPU 4 degraded %d", width(sn, gpu5), width(dn, gpu5), width(dn, gpu4))
	}
	if rate(sn, "mlx5_3") != "400 Gb/sec (4X NDR)" || rate(dn, "mlx5_3") != "200 Gb/sec (4X HDR)" || rate(dn, "mlx5_0") != "400 Gb/sec (4X NDR)" {
		t.Errorf("mlx5_3 rate: stale %q, degraded %q; mlx5_0 degraded %q", rate(sn, "mlx5_3"), rate(dn, "mlx5_3"), rate(dn, "mlx5_0"))
	}

	// host_gpu: GPU 5 at half, the others as captured.
	sh, dh := nvbandwidthHost(t, stale, ""), nvbandwidthHost(t, degraded, "numactl --cpunodebind=1 --membind=1 ")
	for tc := range sh {
		for gpu := range 8 {
			s, d := sh[tc][gpu], dh[tc][gpu]
			switch {
			case gpu == 5 && (d >= s*0.51 || d <= s*0.49):
				t.Errorf("%s GPU 5: degraded %v, stale %v: want half", tc, d, s)
			case gpu != 5 && d != s:
				t.Errorf("%s GPU %d: degraded %v, stale %v: want equal", tc, gpu, d, s)
			}
		}
	}

	// network: a pair with mlx5_3 at half rate, on either end; others not.
	for _, pair := range [][2]string{{"mlx5_0", "mlx5_3"}, {"mlx5_3", "mlx5_4"}} {
		s, c := ibPair(t, degraded, pair[0], pair[1], 18700)
		if c.AvgGbps != 196.17 || s.AvgGbps != 196.17 || c.Device != pair[1] || s.Device != pair[0] {
			t.Errorf("degraded %v: server %+v client %+v", pair, s, c)
		}
	}
	s, c := ibPair(t, degraded, "mlx5_0", "mlx5_4", 18701)
	if c.AvgGbps != 392.34 || s.AvgGbps != 392.34 {
		t.Errorf("degraded mlx5_0<-mlx5_4: server %v client %v, want 392.34", s.AvgGbps, c.AvgGbps)
	}
	_, c = ibPair(t, stale, "mlx5_0", "mlx5_3", 18702)
	if c.AvgGbps != 392.34 {
		t.Errorf("stale mlx5_0<-mlx5_3: %v, want 392.34", c.AvgGbps)
	}

	// GPU to GPU: NVLink is not the fault, so the same capture.
	for _, tr := range []transport.Transport{stale, degraded} {
		res := run(t, tr, argv(tool.AllReducePerfArgs(8)))
		runs, err := nccltest.Parse(strings.NewReader(string(res.Stdout)))
		if err != nil || len(runs) != 1 {
			t.Fatalf("all_reduce_perf -g 8: %v", err)
		}
		if last, _ := runs[0].Largest(); last.OutOfPlace.BusBW != 473.60 {
			t.Errorf("all_reduce busbw %v", last.OutOfPlace.BusBW)
		}
	}
}

// TestIBWriteBWOneScript: server in the background and client in one shell
// script, the way an operator runs a loopback pair by hand.
func TestIBWriteBWOneScript(t *testing.T) {
	tr, _ := newNode(t, "hgx-h100-converged")
	script := argv(tool.IBWriteBWServerArgs("mlx5_4", 18800)) + " >/dev/null & " + argv(tool.IBWriteBWClientArgs("mlx5_5", 18800, "localhost")) + "; wait"
	res := run(t, tr, script)
	r, err := tool.ParseIBWriteBW(strings.NewReader(string(res.Stdout)))
	if res.ExitCode != 0 || err != nil || r.AvgGbps != 392.34 || r.Device != "mlx5_5" {
		t.Fatalf("exit %d, %+v, %v\n%s%s", res.ExitCode, r, err, res.Stdout, res.Stderr)
	}
}

// TestNvbandwidthCapturesForBench: every testcase bench runs has a capture
// on the HGX H100 profiles, and each replays as one matrix of that name.
func TestNvbandwidthCapturesForBench(t *testing.T) {
	tr, _ := newNode(t, "hgx-h100-degraded")
	for _, tc := range []string{tool.DeviceLocalCopy, tool.DeviceToDeviceReadCE, tool.DeviceToDeviceWriteCE, tool.HostToDeviceCE, tool.DeviceToHostCE} {
		res := run(t, tr, argv(tool.NvbandwidthArgs(tc)))
		ms, err := tool.ParseNvbandwidth(strings.NewReader(string(res.Stdout)))
		if err != nil || len(ms) != 1 || ms[0].Testcase != tc || len(ms[0].Cols) != 8 {
			t.Errorf("%s: %v, %d matrices\n%s%s", tc, err, len(ms), res.Stdout, res.Stderr)
		}
	}
}
