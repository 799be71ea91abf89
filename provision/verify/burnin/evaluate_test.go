package burnin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/outlier"
	"github.com/gpuform/gpuform/provision/verify/dcgm"
)

func readDiag(t *testing.T, name string) *dcgm.Diag {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "dcgm", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	d, err := dcgm.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func readSamples(t *testing.T, name string) []Sample {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSamples(b)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// find returns the findings of one check (and subject, when given).
func find(fs []Finding, check, subject string) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Check == check && (subject == "" || f.Subject == subject) {
			out = append(out, f)
		}
	}
	return out
}

func one(t *testing.T, fs []Finding, check, subject string, want Status, msg string) {
	t.Helper()
	got := find(fs, check, subject)
	if len(got) != 1 {
		t.Fatalf("%s %s: %d findings, want 1: %+v", check, subject, len(got), fs)
	}
	if got[0].Status != want || !strings.Contains(got[0].Message, msg) {
		t.Errorf("%s %s = %s %q, want %s containing %q", check, subject, got[0].Status, got[0].Message, want, msg)
	}
}

// healthy is a whole burn-in that passes: the published r4 capture, the
// modelled healthy load, a steady NCCL run and unchanged counters.
func healthy(t *testing.T) Run {
	return Run{
		DCGM:    readDiag(t, "dcgmi-diag-r4-dcgm2x-blacklist-era-healthy-gcm.txt"),
		Samples: readSamples(t, "load-4xH100-4h-healthy.modelled.csv"),
		// Modelled: 8 iterations of an 8x H100 all_reduce at 8 GiB.
		NCCL:   []NCCLRun{{Name: "all_reduce_perf single node", BusBWGBs: []float64{480.1, 479.6, 481.0, 478.9, 480.4, 479.8, 480.7, 480.2}, Wrong: make([]int64, 8)}},
		Before: map[string]uint64{"00000000:18:00.0/aer_correctable": 2, "00000000:18:00.0/ecc_volatile_uncorrected": 0},
		After:  map[string]uint64{"00000000:18:00.0/aer_correctable": 2, "00000000:18:00.0/ecc_volatile_uncorrected": 0},
	}
}

func TestEvaluateHealthy(t *testing.T) {
	t.Parallel()
	fs := Evaluate(healthy(t), Limits{})
	for _, f := range fs {
		if f.Status != StatusPass {
			t.Errorf("healthy burn-in: %s %s %s: %s", f.Check, f.Subject, f.Status, f.Message)
		}
	}
	// 1 dcgm + 4 thermal + 4 clocks + 1 nccl + 1 counters.
	if len(fs) != 11 {
		t.Errorf("%d findings, want 11: %+v", len(fs), fs)
	}
	one(t, fs, "burnin.dcgm", "", StatusPass, "Memtest")
	one(t, fs, "burnin.thermal", "00000000:5D:00.0", StatusPass, "peak 74 °C")
	if !NewRecord(node, t0, t0, 0, fs).Passed {
		t.Error("record of a healthy burn-in is not passed")
	}
}

// TestEvaluateFaults shows each part of the burn-in fails when the fault
// it guards is there, the rest of the run healthy.
func TestEvaluateFaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		fault   func(*Run)
		lim     Limits
		check   string
		subject string
		want    Status
		msg     string
	}{
		{"thermal throttling", func(r *Run) { r.Samples = readSamples(t, "load-4xH100-4h-gpu3-thermal-throttle.modelled.csv") }, Limits{},
			"burnin.thermal", "00000000:5D:00.0", StatusFail, "throttled in 9 of 13 samples (hw_thermal_slowdown), first after 1h20m00s, peak 89 °C"},
		{"clock below peers", func(r *Run) { r.Samples = readSamples(t, "load-4xH100-4h-gpu3-thermal-throttle.modelled.csv") }, Limits{},
			"burnin.clocks", "00000000:5D:00.0", StatusFail, "1410 MHz, 29% below its 4 peers' median 1980 MHz"},
		{"over the temperature limit", func(*Run) {}, Limits{MaxTempC: 72},
			"burnin.thermal", "00000000:5D:00.0", StatusFail, "above 72 °C in"},
		{"no samples", func(r *Run) { r.Samples = nil }, Limits{}, "burnin.thermal", "", StatusNotRun, "no temperature"},
		{"dcgm test failed", func(r *Run) { r.DCGM = readDiag(t, "dcgmi-diag-r2-dcgm3.3.0-8xGA102-pcie-fail-all.txt") }, Limits{},
			"burnin.dcgm", "", StatusFail, "fail"},
		{"dcgm stress all skipped", func(r *Run) { r.DCGM = readDiag(t, "dcgmi-diag-r3-dcgm3.3.9-2xRTXPRO6000-all-skip-printed-twice.txt") }, Limits{},
			"burnin.dcgm", "", StatusNotRun, "all skipped"},
		{"dcgm missing", func(r *Run) { r.DCGM = nil }, Limits{}, "burnin.dcgm", "", StatusNotRun, "did not run"},
		{"nccl #wrong", func(r *Run) { r.NCCL[0].Wrong[5] = 3 }, Limits{}, "burnin.nccl", "", StatusFail, "#wrong 3 over 8 iterations"},
		{"nccl busbw variance", func(r *Run) { r.NCCL[0].BusBWGBs[3], r.NCCL[0].BusBWGBs[6] = 310.2, 305.0 }, Limits{},
			"burnin.nccl", "", StatusFail, "busbw varied"},
		{"nccl one iteration", func(r *Run) { r.NCCL[0].BusBWGBs, r.NCCL[0].Wrong = r.NCCL[0].BusBWGBs[:1], nil }, Limits{}, "burnin.nccl", "", StatusNotRun, "1 iterations"},
		{"AER rose", func(r *Run) { r.After["00000000:18:00.0/aer_correctable"] = 9 }, Limits{}, "burnin.counters", "", StatusFail, "aer_correctable +7"},
		{"ECC counter unreadable after", func(r *Run) { delete(r.After, "00000000:18:00.0/ecc_volatile_uncorrected") }, Limits{}, "burnin.counters", "", StatusFail, "no longer readable"},
		{"counters not read", func(r *Run) { r.Before = nil }, Limits{}, "burnin.counters", "", StatusNotRun, "not read"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := healthy(t)
			c.fault(&r)
			fs := Evaluate(r, c.lim)
			one(t, fs, c.check, c.subject, c.want, c.msg)
			if NewRecord(node, t0, t0, 0, fs).Passed {
				t.Error("the record of a burn-in with this fault says passed")
			}
		})
	}
}

func TestDCGMOptional(t *testing.T) {
	t.Parallel()
	r := healthy(t)
	r.DCGM, r.DCGMOptional = nil, true
	if got := find(Evaluate(r, Limits{}), "burnin.dcgm", ""); len(got) != 0 {
		t.Errorf("optional DCGM absent: %+v, want no finding", got)
	}
}

func TestParseSamplesRefusesBadLines(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"2026/11/30 08:00:00.000, 00000000:18:00.0, H100, 58, 1965\n",
		"2026/11/30 08:00:00.000, 00000000:18:00.0, H100, [N/A], 1965, 0x0\n",
		"yesterday, 00000000:18:00.0, H100, 58, 1965, 0x0\n",
	} {
		if _, err := ParseSamples([]byte(in)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("ParseSamples(%q) = %v, want an error naming line 1", in, err)
		}
	}
}

func TestAddAER(t *testing.T) {
	t.Parallel()
	// Modelled on the kernel's aer_dev_correctable layout
	// (Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats).
	m := map[string]uint64{}
	file := "RxErr 0\nBadTLP 3\nBadDLLP 1\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 4\n"
	if err := AddAER(m, "0000:18:00.0", "correctable", []byte(file)); err != nil || m["0000:18:00.0/aer_correctable"] != 4 {
		t.Errorf("AddAER = %v, %v", err, m)
	}
	if err := AddAER(m, "0000:18:00.0", "fatal", []byte("Undefined 0\n")); err == nil {
		t.Error("a file without its total was read as a count")
	}
}

// TestFleetClocks: a node whose every GPU runs 20 % below the others'
// clocks under load looks healthy to its own peers (burnin.clocks
// compares a GPU with its node's GPUs); across hosts it fails
// burnin.fleet_clocks, each of its GPUs named, and the other hosts pass.
// A single host is no comparison.
func TestFleetClocks(t *testing.T) {
	var values []outlier.Value
	for _, host := range []string{"a", "b", "c"} {
		mhz := 1980.0
		if host == "c" {
			mhz = 1584
		}
		var samples []Sample
		for g := range 4 {
			samples = append(samples, Sample{Seconds: 5, BusID: fmt.Sprintf("0000:%02x:00.0", 0x18+g), Model: "NVIDIA H100 80GB HBM3", SMClockMHz: int(mhz)})
		}
		if got := judgeClocks(samples, Limits{}); len(got) != 4 || got[0].Status != StatusPass {
			t.Errorf("host %s: its own GPUs' comparison %+v, want 4 passes", host, got)
		}
		values = append(values, ClockValues(host, samples)...)
	}
	got := FleetClocks(values, 0)
	if len(got["a"]) != 1 || got["a"][0].Status != StatusPass || len(got["b"]) != 1 || got["b"][0].Status != StatusPass {
		t.Errorf("a, b: %+v %+v; want one pass each", got["a"], got["b"])
	}
	if len(got["c"]) != 4 {
		t.Fatalf("c: %+v; want its 4 GPUs failed", got["c"])
	}
	want := Finding{Check: "burnin.fleet_clocks", Subject: "0000:18:00.0", Status: StatusFail,
		Message: "median SM clock under load 1584 MHz, 20% below the median 1980 MHz of 12 GPUs of its model on 3 hosts"}
	if diff := cmp.Diff(want, got["c"][0]); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if one := FleetClocks(values[:4], 0); one != nil {
		t.Errorf("one host: %+v, want no comparison", one)
	}
}
