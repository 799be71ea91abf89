package runner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/provision/outlier"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/spec"
)

// gpuValues are the per-GPU values verify has from NVML that peers of one
// model should share: the PCIe link (a GPU trained at x8 or Gen4 among x16
// Gen5 peers moves host data at half rate), the power limit (a GPU capped
// below its peers clocks lower under load) and the temperature (a GPU
// hotter than its peers at the same load has an airflow or contact
// problem). Clocks under load are not measured by verify; bench's values
// can be fed to outlier.Flag the same way.
func gpuValues(host string, rep *nvmlfacts.Report) []outlier.Value {
	if rep == nil {
		return nil
	}
	var out []outlier.Value
	add := func(g nvmlfacts.GPU, metric string, v float64, higher bool) {
		out = append(out, outlier.Value{Host: host, Device: g.BusID, Model: g.Name, Metric: metric, V: v, HigherIsBetter: higher})
	}
	for _, g := range rep.GPUs {
		if g.PCIe != nil {
			add(g, "pcie_width", float64(g.PCIe.CurrentWidth), true)
			add(g, "pcie_max_gen", float64(g.PCIe.MaxGen), true)
		}
		if g.PowerLimitW != nil {
			add(g, "power_limit_w", *g.PowerLimitW, true)
		}
		if g.TemperatureC != nil {
			add(g, "temperature_c", float64(*g.TemperatureC), false)
		}
	}
	return out
}

// Metric names of a host's single-node nccl-tests busbw:
// "nccl.<test>.busbw_gbps".
const (
	ncclMetricPrefix = "nccl."
	ncclMetricSuffix = ".busbw_gbps"
)

// ncclValues are a host's single-node nccl-tests results (busbw of the
// largest size), one value per test, for comparison across the hosts of
// the same GPU model: a node whose NVLink or NVSwitch path is slow passes
// a catalogue floor set for the worst acceptable system but trails its
// peers. Multi-node results are the group's, the same on every host, and
// are left to pairwise isolation.
func ncclValues(h report.Host, n *spec.Node) []outlier.Value {
	model := ""
	if h.NVML != nil && len(h.NVML.GPUs) > 0 {
		model = h.NVML.GPUs[0].Name
	}
	var out []outlier.Value
	for _, t := range verify.ExpectationFor(n).NCCL {
		res, ok := h.NCCL[t.Name]
		if t.MultiNode || !ok {
			continue
		}
		if v := res.Judge(0); v.BusBW > 0 {
			out = append(out, outlier.Value{Host: h.Host, Model: model, Metric: ncclMetricPrefix + t.Name + ncclMetricSuffix, V: v.BusBW, HigherIsBetter: true})
		}
	}
	return out
}

// failNCCL fails a host's nccl.<test> check for a busbw more than the
// margin below its peers' (outliers = "fail").
func failNCCL(h *report.Host, test string, f outlier.Finding, margin float64) {
	for i := range h.Checks {
		c := &h.Checks[i]
		if c.ID != verify.CheckNCCL.Named(test) {
			continue
		}
		why := fmt.Sprintf("busbw %.2f GB/s is %.0f%% below the median %.2f GB/s of %d hosts with the same GPUs (more than the %.0f%% margin; verify { outliers = \"fail\" })", f.V, 100*f.Worse, f.Median, f.Peers, 100*margin)
		if c.Status == verify.StatusFail && c.Message != "" {
			c.Message += "; " + why
		} else {
			c.Message = why
		}
		c.Status = verify.StatusFail
	}
}

// peerOutliers compares every GPU with its peers (same model, same host
// and across the hosts verified), and every host's single-node nccl-tests
// busbw with the hosts' of the same GPU model, with each node block's
// margin. Findings of nodes with outliers = "fail" become failed
// nvml.peer_outlier[gpuN] checks (or fail the host's nccl.<test>) on
// their hosts; the others are returned as the report's warnings.
func peerOutliers(targets []target.Host, hosts []report.Host) []report.Outlier {
	nodeOf := map[string]*spec.Node{}
	for _, t := range targets {
		nodeOf[t.Host.Name] = t.Node
	}
	// Hosts whose nodes share a margin are compared together.
	byMargin := map[float64][]outlier.Value{}
	var margins []float64
	fail := map[string]bool{}
	for _, h := range hosts {
		n := nodeOf[h.Host]
		if n == nil {
			continue
		}
		mode, margin := verify.OutlierSettings(n)
		if mode == spec.OutliersOff {
			continue
		}
		fail[h.Host] = mode == spec.OutliersFail
		if _, ok := byMargin[margin]; !ok {
			margins = append(margins, margin)
		}
		byMargin[margin] = append(byMargin[margin], gpuValues(h.Host, h.NVML)...)
		byMargin[margin] = append(byMargin[margin], ncclValues(h, n)...)
	}
	slices.Sort(margins)
	var warnings []report.Outlier
	for _, m := range margins {
		for _, f := range outlier.Once(outlier.Flag(byMargin[m], m)) {
			if !fail[f.Host] {
				warnings = append(warnings, report.Outlier{Finding: f, Margin: m})
				continue
			}
			for i := range hosts {
				if hosts[i].Host != f.Host {
					continue
				}
				if test, ok := strings.CutPrefix(f.Metric, ncclMetricPrefix); ok {
					failNCCL(&hosts[i], strings.TrimSuffix(test, ncclMetricSuffix), f, m)
					continue
				}
				hosts[i].Checks = append(hosts[i].Checks, outlierCheck(hosts[i].NVML, f, m))
			}
		}
	}
	return warnings
}

// outlierCheck is the failed check of a finding on a node that fails
// outliers.
func outlierCheck(rep *nvmlfacts.Report, f outlier.Finding, margin float64) verify.CheckResult {
	dir := "below"
	if !f.HigherIsBetter {
		dir = "above"
	}
	r := verify.CheckResult{
		ID:       string(verify.CheckPeerOutlier),
		Status:   verify.StatusFail,
		Observed: fmt.Sprintf("%s %g", f.Metric, f.V),
		Expected: fmt.Sprintf("within %.0f%% of the %s median %g (%d %s)", 100*margin, f.Scope, f.Median, f.Peers, f.Model),
		Message:  fmt.Sprintf("%.0f%% %s the median of its peers, though within its floors (verify { outliers = \"fail\" })", 100*f.Worse, dir),
	}
	if rep != nil {
		for _, g := range rep.GPUs {
			if g.BusID == f.Device {
				r.ID = verify.CheckPeerOutlier.GPU(g.Index)
				r.GPU = &verify.GPURef{Index: g.Index, BusID: g.BusID, UUID: g.UUID, Serial: g.Serial}
			}
		}
	}
	return r
}
