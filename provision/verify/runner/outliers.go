package runner

import (
	"fmt"
	"slices"

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

// peerOutliers compares every GPU with its peers (same model, same host
// and across the hosts verified) with each node block's margin. Findings
// of nodes with outliers = "fail" become failed nvml.peer_outlier[gpuN]
// checks on their hosts; the others are returned as the report's
// warnings.
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
		mode, margin := outlierSettings(n)
		if mode == spec.OutliersOff {
			continue
		}
		fail[h.Host] = mode == spec.OutliersFail
		if _, ok := byMargin[margin]; !ok {
			margins = append(margins, margin)
		}
		byMargin[margin] = append(byMargin[margin], gpuValues(h.Host, h.NVML)...)
	}
	slices.Sort(margins)
	var warnings []report.Outlier
	for _, m := range margins {
		seen := map[[3]string]bool{}
		for _, f := range outlier.Flag(byMargin[m], m) {
			// Flag sorts the node comparison before the fleet one: a
			// device off in both is reported once, against its node.
			key := [3]string{f.Host, f.Device, f.Metric}
			if seen[key] {
				continue
			}
			seen[key] = true
			if !fail[f.Host] {
				warnings = append(warnings, report.Outlier{Finding: f, Margin: m})
				continue
			}
			for i := range hosts {
				if hosts[i].Host == f.Host {
					hosts[i].Checks = append(hosts[i].Checks, outlierCheck(hosts[i].NVML, f, m))
				}
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
