//go:build cgo

package report

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpuform/gpuform/internal/promtool"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// promDocument is a verify run over a healthy simulated DGX H100, one with
// hardware faults, and an unreachable host, each carrying the NVML report
// and nccl-tests result its checks judged, as runner.Run hands them on.
func promDocument(t *testing.T) *Document {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "nccltest", "testdata", "all_reduce_perf-8xH100-nvswitch-1node.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs, err := nccltest.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	on := true
	exp := verify.Expectation{
		KB:       testKB,
		GPUCount: 8, GPUModel: "H100", DriverVersion: "550.54.15", PersistenceMode: &on, NVLink: verify.NVLinkAllActive,
		NCCL: []verify.NCCLExpectation{{Name: "allreduce", Command: "all_reduce_perf -b 128M -e 4G -f 2 -g 8", MinBusBWGBps: 450}},
	}
	host := func(name string, faults ...nvmlfacts.Fault) Host {
		m, err := nvmlfacts.NewMock(nvmlfacts.MockDGXH100, faults...)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := nvmlfacts.Collect(context.Background(), m, nvmlfacts.Options{XIDWindow: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		rep.Source, rep.Mock = nvmlfacts.SourceMock, nvmlfacts.MockDGXH100
		extra := verify.HostFacts{NCCL: map[string]nccltest.Result{"allreduce": {Runs: runs}}}
		h := NewHost(name, verify.Check(exp, rep, extra), 1500*time.Millisecond)
		h.NVML, h.NCCL = rep, extra.NCCL
		return h
	}
	// Rails as NICPorts reports them: gpu001's up at NDR beside a down
	// storage port, gpu002's second rail at HDR and its third down.
	rail := func(dev string, up bool, rate float64, judged bool) verify.NICPort {
		p := verify.NICPort{Device: dev, Port: 1, State: "ACTIVE", PhysState: "LinkUp", RateGbps: rate, LinkLayer: "InfiniBand", Judged: judged, Up: up}
		if !up {
			p.State, p.PhysState = "DOWN", "Polling"
		}
		if judged {
			p.DeclaredRateGbps = 400
		}
		return p
	}
	healthy, faulty := host("gpu001"), host("gpu002",
		nvmlfacts.Fault{Kind: nvmlfacts.FaultPCIeX8, GPU: 3}, nvmlfacts.Fault{Kind: nvmlfacts.FaultNVLinkDown, GPU: 6},
		nvmlfacts.Fault{Kind: nvmlfacts.FaultUncorrectableECC, GPU: 1}, nvmlfacts.Fault{Kind: nvmlfacts.FaultRemapFailure, GPU: 2},
		nvmlfacts.Fault{Kind: nvmlfacts.FaultHot, GPU: 5}, nvmlfacts.Fault{Kind: nvmlfacts.FaultThermalSlowdown, GPU: 5},
		nvmlfacts.Fault{Kind: nvmlfacts.FaultXID, GPU: 4, Value: 13})
	healthy.NICs = []verify.NICPort{rail("mlx5_0", true, 400, true), rail("mlx5_2", false, 10, false)}
	faulty.NICs = []verify.NICPort{rail("mlx5_0", true, 400, true), rail("mlx5_3", true, 200, true), rail("mlx5_4", false, 10, true)}
	d := New(testKB, verify.TierFull, []Host{
		healthy,
		faulty,
		UnreachableHost("gpu003", errors.New("dial tcp 10.0.0.3:22: connect: connection refused"), 3*time.Second),
	})
	// As runner.Run stamps it: taken at 11:59:18, standing for an hour.
	d.CheckedAt = time.Date(2026, 11, 30, 11, 59, 18, 0, time.UTC)
	d.ExpiresAt = d.CheckedAt.Add(time.Hour)
	return d
}

func promOptions() PrometheusOptions {
	return PrometheusOptions{
		Duration:          42 * time.Second,
		Finished:          time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
		KnowledgeBaseDate: time.Date(2026, 8, 12, 0, 0, 0, 0, time.UTC),
	}
}

// parseProm reads an exposition back with Prometheus's own parser.
func parseProm(t *testing.T, b []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("expfmt cannot parse the output: %v\n%s", err, b)
	}
	return fams
}

// promValue returns the value of the series of family name whose labels
// include want, and whether exactly one series matched.
func promValue(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := fams[name]
	if mf == nil {
		return 0, false
	}
	var got []float64
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if have[k] != v {
				match = false
			}
		}
		if match {
			switch {
			case m.Gauge != nil:
				got = append(got, m.GetGauge().GetValue())
			case m.Counter != nil:
				got = append(got, m.GetCounter().GetValue())
			}
		}
	}
	if len(got) != 1 {
		return 0, false
	}
	return got[0], true
}

func TestWritePrometheus(t *testing.T) {
	d := promDocument(t)
	var b bytes.Buffer
	if err := WritePrometheus(&b, d, promOptions()); err != nil {
		t.Fatal(err)
	}
	golden(t, "verify.prom", b.Bytes())
	fams := parseProm(t, b.Bytes())

	gpu := func(host, i string, extra ...string) map[string]string {
		m := map[string]string{"host": host, "gpu": i}
		for k := 0; k+1 < len(extra); k += 2 {
			m[extra[k]] = extra[k+1]
		}
		return m
	}
	nic := func(host, dev, judged string) map[string]string {
		return map[string]string{"host": host, "device": dev, "port": "1", "judged": judged}
	}
	tests := []struct {
		name   string
		metric string
		labels map[string]string
		want   float64
	}{
		{"rail up", "gpuform_nic_link_up", nic("gpu001", "mlx5_0", "true"), 1},
		{"storage port down, reported", "gpuform_nic_link_up", nic("gpu001", "mlx5_2", "false"), 0},
		{"rail down", "gpuform_nic_link_up", nic("gpu002", "mlx5_4", "true"), 0},
		{"rail at HDR", "gpuform_nic_link_rate_bytes_per_second", nic("gpu002", "mlx5_3", "true"), 25e9},
		{"rail declared NDR", "gpuform_nic_link_declared_rate_bytes_per_second", nic("gpu002", "mlx5_3", "true"), 50e9},
		{"healthy link width", "gpuform_gpu_pcie_link_width_lanes", gpu("gpu001", "3"), 16},
		{"x8 link width", "gpuform_gpu_pcie_link_width_lanes", gpu("gpu002", "3"), 8},
		{"x8 link max width", "gpuform_gpu_pcie_link_max_width_lanes", gpu("gpu002", "3"), 16},
		{"healthy nvlinks up", "gpuform_gpu_nvlink_links_up", gpu("gpu001", "6"), 18},
		{"nvlink down", "gpuform_gpu_nvlink_links_up", gpu("gpu002", "6"), 17},
		{"remap failure", "gpuform_gpu_row_remap_failure", gpu("gpu002", "2"), 1},
		{"no remap failure", "gpuform_gpu_row_remap_failure", gpu("gpu001", "2"), 0},
		{"thermal slowdown", "gpuform_gpu_throttle_reason_active", gpu("gpu002", "5", "reason", nvmlfacts.ThrottleHWThermalSlowdown), 1},
		{"no thermal slowdown", "gpuform_gpu_throttle_reason_active", gpu("gpu001", "5", "reason", nvmlfacts.ThrottleHWThermalSlowdown), 0},
		{"pcie check fails", "gpuform_check_ok", map[string]string{"host": "gpu002", "check": "nvml.pcie_link[gpu3]"}, 0},
		{"pcie check status", "gpuform_check_status", map[string]string{"host": "gpu002", "check": "nvml.pcie_link[gpu3]", "status": "fail"}, 1},
		{"pcie check not pass", "gpuform_check_status", map[string]string{"host": "gpu002", "check": "nvml.pcie_link[gpu3]", "status": "pass"}, 0},
		{"gpu count passes", "gpuform_check_ok", map[string]string{"host": "gpu001", "check": "nvml.gpu_count"}, 1},
		{"unreachable", "gpuform_host_ok", map[string]string{"host": "gpu003"}, 0},
		{"kb date", "gpuform_knowledge_base_date_timestamp_seconds", nil, float64(promOptions().KnowledgeBaseDate.Unix())},
		{"duration", "gpuform_verify_duration_seconds", nil, 42},
		{"host duration", "gpuform_verify_host_duration_seconds", map[string]string{"host": "gpu003"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := promValue(fams, tt.metric, tt.labels)
			if !ok || got != tt.want {
				t.Errorf("%s%v = %v (found %v), want %v", tt.metric, tt.labels, got, ok, tt.want)
			}
		})
	}
	// Values that depend on the simulated hardware: read from the report
	// itself rather than hard-coded.
	rep := d.Hosts[1].NVML
	if got, _ := promValue(fams, "gpuform_gpu_ecc_volatile_uncorrected_errors_total", gpu("gpu002", "1")); rep.GPUs[1].ECC.VolatileUncorrected == nil || got != float64(*rep.GPUs[1].ECC.VolatileUncorrected) || got == 0 {
		t.Errorf("volatile ECC errors of gpu002/1 = %v, report %v", got, rep.GPUs[1].ECC.VolatileUncorrected)
	}
	if got, _ := promValue(fams, "gpuform_gpu_ecc_aggregate_uncorrected_errors_total", gpu("gpu002", "1")); rep.GPUs[1].ECC.AggregateUncorrected == nil || got != float64(*rep.GPUs[1].ECC.AggregateUncorrected) || got == 0 {
		t.Errorf("aggregate ECC errors of gpu002/1 = %v, report %v", got, rep.GPUs[1].ECC.AggregateUncorrected)
	}
	if got, _ := promValue(fams, "gpuform_gpu_temperature_celsius", gpu("gpu002", "5")); got != float64(*rep.GPUs[5].TemperatureC) || got <= float64(*d.Hosts[0].NVML.GPUs[5].TemperatureC) {
		t.Errorf("temperature of the hot GPU = %v", got)
	}
	if len(rep.XID.Events) == 0 {
		t.Fatal("the xid fault raised no event")
	}
	ev := rep.XID.Events[0]
	if got, ok := promValue(fams, "gpuform_gpu_xid_events", map[string]string{"host": "gpu002", "gpu": "4", "xid": strconv.FormatUint(ev.XID, 10)}); !ok || got < 1 {
		t.Errorf("xid events of gpu002/4 = %v (found %v)", got, ok)
	}
	busbw := d.Hosts[0].NCCL["allreduce"].Judge(0).BusBW * 1e9
	if got, ok := promValue(fams, "gpuform_nccl_busbw_bytes_per_second", map[string]string{"host": "gpu001", "test": "allreduce"}); !ok || got != busbw || got == 0 {
		t.Errorf("busbw = %v, want %v", got, busbw)
	}
	promtool.CheckMetrics(t, b.Bytes())
}

// TestPrometheusNVLinkPairs: on the nvidia-smi path the NV# count of each
// GPU pair is exported, 0 for a pair over PCIe, and MIG mode per GPU.
func TestPrometheusNVLinkPairs(t *testing.T) {
	rep := &nvmlfacts.Report{Source: nvmlfacts.SourceNvidiaSMI,
		GPUs:        []nvmlfacts.GPU{{Index: 0, MIG: &nvmlfacts.MIG{Enabled: true}}, {Index: 1}, {Index: 2}},
		GPUTopology: []nvmlfacts.GPUPair{{A: 0, B: 1, NVLinks: 2}, {A: 0, B: 2, Level: nvmlfacts.LevelSys}, {A: 1, B: 2, NVLinks: 1}},
	}
	var b bytes.Buffer
	if err := WritePrometheus(&b, &Document{Hosts: []Host{{Host: "dgx1", NVML: rep}}}, PrometheusOptions{}); err != nil {
		t.Fatal(err)
	}
	fams := parseProm(t, b.Bytes())
	for _, tt := range []struct {
		gpu, peer string
		want      float64
	}{{"0", "1", 2}, {"0", "2", 0}, {"1", "2", 1}} {
		if got, ok := promValue(fams, "gpuform_gpu_pair_nvlinks", map[string]string{"host": "dgx1", "gpu": tt.gpu, "peer": tt.peer}); !ok || got != tt.want {
			t.Errorf("gpu%s–gpu%s = %v (found %v), want %v", tt.gpu, tt.peer, got, ok, tt.want)
		}
	}
	if got, ok := promValue(fams, "gpuform_gpu_mig_mode_enabled", map[string]string{"host": "dgx1", "gpu": "0"}); !ok || got != 1 {
		t.Errorf("MIG mode of gpu0 = %v (found %v)", got, ok)
	}
	if _, ok := promValue(fams, "gpuform_gpu_mig_mode_enabled", map[string]string{"host": "dgx1", "gpu": "1"}); ok {
		t.Error("a GPU without MIG has a MIG mode series")
	}
	promtool.CheckMetrics(t, b.Bytes())
}
