package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// PrometheusOptions carry what the Prometheus output shows besides the
// document.
type PrometheusOptions struct {
	// Duration is how long the whole verify run took; 0 omits the metric.
	Duration time.Duration
	// Finished is when the run ended; zero omits
	// gpuform_verify_last_run_timestamp_seconds.
	Finished time.Time
	// KnowledgeBaseDate is the date of the knowledge base's newest fact;
	// zero omits gpuform_knowledge_base_date_timestamp_seconds.
	KnowledgeBaseDate time.Time
}

// checkStatuses returns the values gpuform_check_status's status label takes,
// all written for every check so that a state change is a value change.
func checkStatuses() []verify.Status {
	return []verify.Status{verify.StatusPass, verify.StatusFail, verify.StatusError, verify.StatusSkip, verify.StatusNotRun}
}

// WritePrometheus writes d in the Prometheus text exposition format, for
// node_exporter's textfile collector. The metrics are listed in README.md
// ("Prometheus metrics"); every family is a gauge except the ECC error
// counters, which are the driver's own monotonic counts.
func WritePrometheus(w io.Writer, d *Document, o PrometheusOptions) error {
	fams := newFamilies()
	if o.Duration > 0 {
		fams.gauge("gpuform_verify_duration_seconds", "How long the whole gpuform verify run took.", o.Duration.Seconds())
	}
	if !o.Finished.IsZero() {
		fams.gauge("gpuform_verify_last_run_timestamp_seconds", "When the gpuform verify run ended, seconds since the Unix epoch.", float64(o.Finished.Unix()))
	}
	if !o.KnowledgeBaseDate.IsZero() {
		fams.gauge("gpuform_knowledge_base_date_timestamp_seconds", "Date of the newest fact in gpuform's knowledge base (see gpuform version), seconds since the Unix epoch.", float64(o.KnowledgeBaseDate.Unix()))
	}
	for _, h := range d.Hosts {
		host := []string{"host", h.Host}
		if h.Duration > 0 {
			fams.gauge("gpuform_verify_host_duration_seconds", "How long verifying the host took.", h.Duration.Seconds(), host...)
		}
		if !d.CheckedAt.IsZero() {
			fams.gauge("gpuform_verify_checked_timestamp_seconds", "When the verify run that judged the host started (checked_at), seconds since the Unix epoch.", float64(d.CheckedAt.Unix()), host...)
			fams.gauge("gpuform_verify_expires_timestamp_seconds", "When the host's verify result stops standing (expires_at: checked_at plus health { valid_for }); a pass after it proves nothing.", float64(d.ExpiresAt.Unix()), host...)
		}
		hostOK := 1.0
		for _, c := range h.Checks {
			ok := 1.0
			if c.Blocks() {
				ok, hostOK = 0, 0
			}
			fams.gauge("gpuform_check_ok", "0 when the verify check keeps the host from passing (failed, could not be judged, or not run where the tier needed it); 1 otherwise (passed, skipped as not applicable or optional, or left to a deeper tier).", ok, "host", h.Host, "check", c.ID)
			for _, s := range checkStatuses() {
				fams.gauge("gpuform_check_status", "1 for the verify check's current status (pass, fail, error, skip, not run), 0 for the others.", b2f(c.Status == s), "host", h.Host, "check", c.ID, "status", string(s))
			}
		}
		fams.gauge("gpuform_host_ok", "1 when the host passed verify: no check failed, errored or was not run where the tier needed it.", hostOK, host...)
		writeNVML(fams, h.Host, h.NVML)
		writeNICs(fams, h.Host, h.NICs)
		for _, name := range sortedKeys(h.NCCL) {
			v := h.NCCL[name].Judge(0)
			if v.Size == 0 {
				continue
			}
			// nccl-tests prints GB/s with GB = 1e9 bytes.
			fams.gauge("gpuform_nccl_busbw_bytes_per_second", "nccl-tests bus bandwidth at the largest message size (the smaller of out-of-place and in-place).", v.BusBW*1e9, "host", h.Host, "test", name)
			fams.gauge("gpuform_nccl_message_size_bytes", "The largest message size the nccl-tests run measured.", float64(v.Size), "host", h.Host, "test", name)
		}
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range fams.list {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("writing %s: %w", mf.GetName(), err)
		}
	}
	return nil
}

// writeNICs adds a host's RDMA ports: every port, labelled judged="true"
// for a compute rail's port nic.link judged and "false" for one reported
// only (storage, management), so an alert can page on rails and chart the
// rest.
func writeNICs(fams *families, host string, ports []verify.NICPort) {
	for _, p := range ports {
		l := []string{"host", host, "device", p.Device, "port", strconv.Itoa(p.Port), "judged", strconv.FormatBool(p.Judged)}
		fams.gauge("gpuform_nic_link_up", "1 when the RDMA port is ACTIVE and its physical state LinkUp (/sys/class/infiniband/DEV/ports/N).", b2f(p.Up), l...)
		// Prometheus's base unit is bytes: 400 Gb/s is 50e9 bytes/s.
		fams.gauge("gpuform_nic_link_rate_bytes_per_second", "The RDMA port's signalling rate as sysfs reports it, in bytes per second (a down port reports its slowest).", p.RateGbps*1e9/8, l...)
		if p.DeclaredRateGbps > 0 {
			fams.gauge("gpuform_nic_link_declared_rate_bytes_per_second", "The port speed the spec's hardware block declares for the device, in bytes per second.", float64(p.DeclaredRateGbps)*1e9/8, l...)
		}
	}
}

// writeNVML adds the per-GPU gauges of one host's NVML report.
func writeNVML(fams *families, host string, rep *nvmlfacts.Report) {
	if rep == nil {
		return
	}
	// Every per-GPU series names the GPU twice: gpu is the spec's index
	// (the N of the checks' [gpuN], matched by PCI bus id, so it does not
	// move when NVML renumbers the GPUs after one fell off the bus) and
	// pci_bus_id its address as NVML prints it, which never moves.
	busOf := map[int]string{}
	for _, g := range rep.GPUs {
		busOf[g.Index] = g.BusID
	}
	for _, g := range rep.GPUs {
		gl := func(extra ...string) []string {
			return append([]string{"host", host, "gpu", strconv.Itoa(g.Index), "pci_bus_id", g.BusID}, extra...)
		}
		fams.gauge("gpuform_gpu_info", "One series per GPU naming its model, UUID, PCI bus id and driver; always 1.", 1,
			"host", host, "gpu", strconv.Itoa(g.Index), "name", g.Name, "uuid", g.UUID, "pci_bus_id", g.BusID, "driver_version", rep.DriverVersion)
		if g.TemperatureC != nil {
			fams.gauge("gpuform_gpu_temperature_celsius", "GPU core temperature.", float64(*g.TemperatureC), gl()...)
		}
		if g.PowerLimitW != nil {
			fams.gauge("gpuform_gpu_power_limit_watts", "Enforced GPU power limit.", *g.PowerLimitW, gl()...)
		}
		if g.PersistenceMode != nil {
			fams.gauge("gpuform_gpu_persistence_mode_enabled", "1 when persistence mode is enabled.", b2f(*g.PersistenceMode), gl()...)
		}
		if m := g.MIG; m != nil {
			fams.gauge("gpuform_gpu_mig_mode_enabled", "1 when MIG mode is enabled (absent on GPUs without MIG).", b2f(m.Enabled), gl()...)
			fams.gauge("gpuform_gpu_mig_mode_pending_enabled", "1 when MIG mode will be enabled after the next GPU reset.", b2f(m.PendingEnabled), gl()...)
		}
		if e := g.ECC; e != nil {
			fams.gauge("gpuform_gpu_ecc_enabled", "1 when ECC is enabled.", b2f(e.Enabled), gl()...)
			if e.VolatileUncorrected != nil {
				fams.counter("gpuform_gpu_ecc_volatile_uncorrected_errors_total", "Uncorrectable ECC errors since the driver loaded.", float64(*e.VolatileUncorrected), gl()...)
			}
			if e.AggregateUncorrected != nil {
				fams.counter("gpuform_gpu_ecc_aggregate_uncorrected_errors_total", "Uncorrectable ECC errors over the GPU's life.", float64(*e.AggregateUncorrected), gl()...)
			}
		}
		if r := g.RemappedRows; r != nil {
			fams.gauge("gpuform_gpu_remapped_rows", "Rows the row remapper replaced, by the kind of error that caused it.", float64(r.Corrected), gl("cause", "correctable")...)
			fams.gauge("gpuform_gpu_remapped_rows", "", float64(r.Uncorrected), gl("cause", "uncorrectable")...)
			fams.gauge("gpuform_gpu_row_remap_pending", "1 when a row remap waits for a GPU reset.", b2f(r.Pending), gl()...)
			fams.gauge("gpuform_gpu_row_remap_failure", "1 when a row remap failed (NVIDIA: the GPU needs service).", b2f(r.Failure), gl()...)
		}
		if r := g.RetiredPages; r != nil {
			fams.gauge("gpuform_gpu_retired_pages", "Pages retired by dynamic page retirement, by cause.", float64(r.MultipleSingleBit), gl("cause", "multiple_single_bit")...)
			fams.gauge("gpuform_gpu_retired_pages", "", float64(r.DoubleBit), gl("cause", "double_bit")...)
			fams.gauge("gpuform_gpu_retired_pages_pending", "1 when a page retirement waits for the next reset.", b2f(r.Pending), gl()...)
		}
		if p := g.PCIe; p != nil {
			fams.gauge("gpuform_gpu_pcie_link_generation", "PCIe generation the GPU's link runs at now (it drops at idle).", float64(p.CurrentGen), gl()...)
			fams.gauge("gpuform_gpu_pcie_link_max_generation", "Highest PCIe generation the GPU and its slot both support.", float64(p.MaxGen), gl()...)
			fams.gauge("gpuform_gpu_pcie_link_width_lanes", "PCIe lanes the GPU's link runs with now.", float64(p.CurrentWidth), gl()...)
			fams.gauge("gpuform_gpu_pcie_link_max_width_lanes", "Widest PCIe link the GPU and its slot support.", float64(p.MaxWidth), gl()...)
		}
		if rep.Collected(nvmlfacts.FactNVLink) && len(g.NVLinks) > 0 {
			up := 0
			for _, l := range g.NVLinks {
				if l.Active {
					up++
				}
			}
			fams.gauge("gpuform_gpu_nvlink_links", "NVLink links NVML knows for the GPU.", float64(len(g.NVLinks)), gl()...)
			fams.gauge("gpuform_gpu_nvlink_links_up", "NVLink links of the GPU that are active.", float64(up), gl()...)
		}
		if th := g.Throttle; th != nil {
			// Every known reason is written, 0 or 1, so a reason that
			// clears is a value change rather than a vanished series.
			for _, reason := range knownThrottleReasons() {
				fams.gauge("gpuform_gpu_throttle_reason_active", "1 while the clocks event (throttle) reason is active.", b2f(slices.Contains(th.Active, reason)), gl("reason", reason)...)
			}
			for _, reason := range th.Active {
				if !slices.Contains(knownThrottleReasons(), reason) {
					fams.gauge("gpuform_gpu_throttle_reason_active", "", 1, gl("reason", reason)...)
				}
			}
		}
	}
	// The bonded NVLink count per GPU pair, as `nvidia-smi topo -m` prints
	// it (NV12) on the nvidia-smi path: written for every pair of the
	// matrix, 0 for a pair joined over PCIe, once a pair shows NV#.
	nvPairs := slices.ContainsFunc(rep.GPUTopology, func(p nvmlfacts.GPUPair) bool { return p.NVLinks > 0 })
	for _, p := range rep.GPUTopology {
		if nvPairs {
			fams.gauge("gpuform_gpu_pair_nvlinks", "NVLinks between two GPUs (nvidia-smi topo -m NV#); 0 where the pair is joined over PCIe.", float64(p.NVLinks),
				"host", host, "gpu", strconv.Itoa(p.A), "pci_bus_id", busOf[p.A], "peer", strconv.Itoa(p.B), "peer_pci_bus_id", busOf[p.B])
		}
	}
	if x := rep.XID; x != nil {
		fams.gauge("gpuform_xid_window_seconds", "How long verify listened for XID events.", float64(x.WindowMS)/1000, "host", host)
		type key struct {
			gpu int
			xid uint64
		}
		counts := map[key]int{}
		var keys []key
		for _, e := range x.Events {
			k := key{e.GPU, e.XID}
			if counts[k] == 0 {
				keys = append(keys, k)
			}
			counts[k]++
		}
		for _, k := range keys {
			l := []string{"host", host, "gpu", strconv.Itoa(k.gpu)}
			if bus, ok := busOf[k.gpu]; ok {
				l = append(l, "pci_bus_id", bus)
			}
			fams.gauge("gpuform_gpu_xid_events", "XID events seen during verify's listening window, by GPU (-1: unknown) and XID number.", float64(counts[k]), append(l, "xid", strconv.FormatUint(k.xid, 10))...)
		}
	}
}

// knownThrottleReasons lists the reason names nvmlfacts decodes.
func knownThrottleReasons() []string {
	return nvmlfacts.ThrottleReasonNames(^uint64(0) & 0x1ff)
}

// families collects metric families in the order they are first used; the
// encoder sorts nothing, so this order is the file's.
type families struct {
	byName map[string]*dto.MetricFamily
	list   []*dto.MetricFamily
}

func newFamilies() *families { return &families{byName: map[string]*dto.MetricFamily{}} }

func (f *families) gauge(name, help string, v float64, labels ...string) {
	f.add(name, help, dto.MetricType_GAUGE, &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(v)}}, labels)
}

func (f *families) counter(name, help string, v float64, labels ...string) {
	f.add(name, help, dto.MetricType_COUNTER, &dto.Metric{Counter: &dto.Counter{Value: proto.Float64(v)}}, labels)
}

// add appends m to the family name, creating it with help and typ when new
// (a later call's help is ignored).
func (f *families) add(name, help string, typ dto.MetricType, m *dto.Metric, labels []string) {
	mf, ok := f.byName[name]
	if !ok {
		mf = &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: typ.Enum()}
		f.byName[name] = mf
		f.list = append(f.list, mf)
	}
	for i := 0; i+1 < len(labels); i += 2 {
		m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(labels[i]), Value: proto.String(labels[i+1])})
	}
	mf.Metric = append(mf.Metric, m)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
