package burnin

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpuform/gpuform/provision/outlier"
	"github.com/gpuform/gpuform/provision/verify/dcgm"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// Status of a finding: a burn-in passes only what it checked.
type Status string

// Statuses.
const (
	StatusPass Status = "pass"
	StatusFail Status = "fail"
	// StatusNotRun is a part of the burn-in that did not run: it keeps
	// the burn-in from passing.
	StatusNotRun Status = "not run"
)

// Finding is one judged part of a burn-in, as a verify check reports it.
type Finding struct {
	// Check is the check's name: burnin.dcgm, burnin.thermal,
	// burnin.clocks, burnin.nccl, burnin.counters.
	Check   string `json:"check"`
	Subject string `json:"subject,omitempty"`
	Status  Status `json:"status"`
	Message string `json:"message"`
}

// Sample is one reading of one GPU during the sustained load.
type Sample struct {
	// Seconds since the load started.
	Seconds float64
	BusID   string
	Model   string
	TempC   int
	// SMClockMHz is the SM clock under load.
	SMClockMHz int
	// Throttle are the clocks event reasons active, nvmlfacts' names.
	Throttle []string
}

// NCCLRun is one long nccl-tests run: the largest size's bus bandwidth of
// each iteration, and the #wrong count of each.
type NCCLRun struct {
	Name string
	// BusBWGBs is each iteration's bus bandwidth at the largest size.
	BusBWGBs []float64
	// Wrong is each iteration's #wrong (out-of-place and in-place summed).
	Wrong []int64
	// Failures are the iterations that did not finish or printed no
	// result, each with why.
	Failures []string
}

// Run is what a burn-in gathered on one node.
type Run struct {
	// DCGM is the `dcgmi diag -r 3` or `-r 4` run; nil when dcgmi is not
	// installed (DCGMOptional) or did not run.
	DCGM *dcgm.Diag
	// DCGMOptional says the node may lack dcgmi (verify { optional }).
	DCGMOptional bool
	// Samples are the sustained load's readings, every GPU.
	Samples []Sample
	// LoadError says why the sustained load did not run or finish (no
	// load generator, one that failed); "" when it ran.
	LoadError string
	// Duration is the sustained load's length asked for; the samples
	// must span it (zero: not judged). SampleEvery is their period.
	Duration, SampleEvery time.Duration
	// NCCL are the long nccl-tests runs (single node, and with a peer).
	NCCL []NCCLRun
	// Before and After are the error counters read around the load
	// (Counters); nil when they could not be read.
	Before, After map[string]uint64
	// CountersError says why NVML's counters could not be read after the
	// load and the NCCL runs (the GPUs stopped answering); it fails the
	// counters.
	CountersError string
}

// Limits are what a burn-in is judged by.
type Limits struct {
	// MaxTempC fails a GPU hotter than this in any sample; 0 is no limit
	// beyond throttling (the GPU's own slowdown temperature acts first).
	MaxTempC int
	// ClockMargin is how far below its peers' median a GPU's median SM
	// clock under load may be (a fraction; 0 is outlier.DefaultMargin).
	ClockMargin float64
	// MaxBusBWVariation is the largest coefficient of variation of an
	// NCCL run's bus bandwidth across iterations (0 is DefaultBusBWVariation).
	MaxBusBWVariation float64
}

// DefaultBusBWVariation: a healthy long NCCL run's busbw moves by a few
// per cent between iterations; 5 % standard deviation over the mean is a
// link that retrains or a peer that stalls.
const DefaultBusBWVariation = 0.05

// throttleFaults are the clocks event reasons that are a fault under a
// sustained load: heat, a hardware slowdown, the power brake. A software
// power cap is what a GPU at its power limit does and is not one.
var throttleFaults = []string{nvmlfacts.ThrottleHWSlowdown, nvmlfacts.ThrottleSWThermalSlowdown,
	nvmlfacts.ThrottleHWThermalSlowdown, nvmlfacts.ThrottleHWPowerBrakeSlowdown}

// Evaluate judges a burn-in run; the findings are in a fixed order (dcgm,
// thermal, clocks, nccl, counters), each GPU or run its own finding.
func Evaluate(r Run, lim Limits) []Finding {
	var out []Finding
	out = append(out, judgeDCGM(r)...)
	if r.LoadError != "" {
		out = append(out, Finding{Check: "burnin.load", Status: StatusFail, Message: r.LoadError})
	} else if f, short := judgeLoadSpan(r); short {
		out = append(out, f)
	}
	out = append(out, judgeThermal(r.Samples, lim)...)
	out = append(out, judgeClocks(r.Samples, lim)...)
	out = append(out, judgeNCCL(r.NCCL, lim)...)
	if r.CountersError != "" {
		out = append(out, Finding{Check: "burnin.counters", Status: StatusFail, Message: "NVML's error counters could not be read after the load: " + r.CountersError})
	} else {
		out = append(out, judgeCounters(r.Before, r.After)...)
	}
	return out
}

// judgeLoadSpan fails a load whose samples end before the duration
// asked: the sampler runs as long as the load generator does, so a
// generator that stopped early (status 0, or a sampler that died) shows
// as samples that span less. Within two sample periods or 2 % of the
// duration, whichever is more, is the load asked.
func judgeLoadSpan(r Run) (Finding, bool) {
	if r.Duration <= 0 || len(r.Samples) == 0 {
		return Finding{}, false
	}
	every := r.SampleEvery
	if every <= 0 {
		every = SampleEvery
	}
	var span float64
	for _, s := range r.Samples {
		span = max(span, s.Seconds)
	}
	got := time.Duration(span * float64(time.Second))
	if got+max(2*every, r.Duration/50) >= r.Duration {
		return Finding{}, false
	}
	return Finding{Check: "burnin.load", Status: StatusFail, Message: fmt.Sprintf("the sustained load's samples span %s of the %s asked: the load generator or its sampler stopped early, and the rest of the burn-in was not run", got.Round(time.Second), r.Duration)}, true
}

func judgeDCGM(r Run) []Finding {
	f := Finding{Check: "burnin.dcgm"}
	switch {
	case r.DCGM == nil && r.DCGMOptional:
		return nil
	case r.DCGM == nil:
		f.Status, f.Message = StatusNotRun, "dcgmi diag -r 3/-r 4 did not run: install DCGM, or add \"dcgm\" to verify { optional }"
		return []Finding{f}
	case r.DCGM.RuntimeError != "":
		f.Status, f.Message = StatusFail, "dcgmi diag: "+r.DCGM.RuntimeError
		return []Finding{f}
	}
	var failed, ran []string
	for _, t := range r.DCGM.Tests {
		st := t.Status
		if st == "" {
			st = t.All
		}
		switch st {
		case "Fail", "Warn":
			failed = append(failed, fmt.Sprintf("%s %s%s", t.Name, strings.ToLower(st), gpuList(t.FailedGPUs())))
		case "Pass":
			if t.Category != "Deployment" && t.Category != "Metadata" {
				ran = append(ran, t.Name)
			}
		}
	}
	switch {
	case len(failed) > 0:
		f.Status, f.Message = StatusFail, "dcgmi diag: "+strings.Join(failed, "; ")
	case len(ran) == 0:
		// Only deployment checks passed: the stress tests were skipped
		// (a DCGM that does not know the GPU), which is no burn-in.
		f.Status, f.Message = StatusNotRun, "dcgmi diag ran no hardware or stress test (all skipped): the GPUs were not exercised by DCGM"
	default:
		f.Status, f.Message = StatusPass, "dcgmi diag passed: "+strings.Join(ran, ", ")
	}
	return []Finding{f}
}

func gpuList(ids []int) string {
	if len(ids) == 0 {
		return ""
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return " on GPU " + strings.Join(s, ",")
}

func byGPU(samples []Sample) (map[string][]Sample, []string) {
	m := map[string][]Sample{}
	for _, s := range samples {
		m[s.BusID] = append(m[s.BusID], s)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return m, keys
}

func judgeThermal(samples []Sample, lim Limits) []Finding {
	if len(samples) == 0 {
		return []Finding{{Check: "burnin.thermal", Status: StatusNotRun, Message: "no temperature or clock samples of the sustained load"}}
	}
	m, keys := byGPU(samples)
	var out []Finding
	for _, bus := range keys {
		f := Finding{Check: "burnin.thermal", Subject: bus, Status: StatusPass}
		var hot, throttled int
		maxT, firstAt := 0, -1.0
		reasons := map[string]bool{}
		for _, s := range m[bus] {
			maxT = max(maxT, s.TempC)
			if lim.MaxTempC > 0 && s.TempC > lim.MaxTempC {
				hot++
			}
			bad := false
			for _, t := range s.Throttle {
				if slices.Contains(throttleFaults, t) {
					reasons[t], bad = true, true
				}
			}
			if bad {
				throttled++
				if firstAt < 0 {
					firstAt = s.Seconds
				}
			}
		}
		n := len(m[bus])
		switch {
		case throttled > 0:
			f.Status = StatusFail
			f.Message = fmt.Sprintf("throttled in %d of %d samples (%s), first after %s, peak %d °C", throttled, n, strings.Join(sortedKeys(reasons), ", "), secs(firstAt), maxT)
		case hot > 0:
			f.Status = StatusFail
			f.Message = fmt.Sprintf("above %d °C in %d of %d samples, peak %d °C", lim.MaxTempC, hot, n, maxT)
		default:
			f.Message = fmt.Sprintf("no thermal or power-brake slowdown in %d samples, peak %d °C", n, maxT)
		}
		out = append(out, f)
	}
	return out
}

func secs(s float64) string {
	d := int64(s)
	return fmt.Sprintf("%dh%02dm%02ds", d/3600, d/60%60, d%60)
}

func sortedKeys(m map[string]bool) []string {
	k := make([]string, 0, len(m))
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

// judgeClocks compares each GPU's median SM clock under load with its
// peers' (provision/outlier, the same comparison verify makes at rest).
// ClockValues are each GPU's median SM clock under the sustained load,
// as the burn-in compares them with the GPU's peers, for host.
func ClockValues(host string, samples []Sample) []outlier.Value {
	m, keys := byGPU(samples)
	var values []outlier.Value
	for _, bus := range keys {
		c := make([]float64, 0, len(m[bus]))
		for _, s := range m[bus] {
			c = append(c, float64(s.SMClockMHz))
		}
		values = append(values, outlier.Value{Host: host, Device: bus, Model: m[bus][0].Model, Metric: "sm_clock_mhz_under_load", V: medianOf(c), HigherIsBetter: true})
	}
	return values
}

// FleetClocks judges the GPUs' clocks under load across the hosts burnt
// in together (ClockValues of each): a GPU whose median SM clock is more
// than margin (0: outlier.DefaultMargin) below the median of its model's
// GPUs on every host fails burnin.fleet_clocks, a node slow as a whole
// that its own GPUs cannot tell. Each host gets its findings: one per
// slow GPU, else one that passes. Fewer than two hosts is no comparison:
// no findings.
func FleetClocks(values []outlier.Value, margin float64) map[string][]Finding {
	hosts := map[string]bool{}
	for _, v := range values {
		hosts[v.Host] = true
	}
	if len(hosts) < 2 {
		return nil
	}
	if margin <= 0 {
		margin = outlier.DefaultMargin
	}
	out := map[string][]Finding{}
	for _, f := range outlier.Flag(values, margin) {
		if f.Scope != outlier.ScopeFleet {
			continue
		}
		out[f.Host] = append(out[f.Host], Finding{Check: "burnin.fleet_clocks", Subject: f.Device, Status: StatusFail,
			Message: fmt.Sprintf("median SM clock under load %.0f MHz, %.0f%% below the median %.0f MHz of %d GPUs of its model on %d hosts", f.V, f.Worse*100, f.Median, f.Peers, len(hosts))})
	}
	for h := range hosts {
		if len(out[h]) == 0 {
			out[h] = []Finding{{Check: "burnin.fleet_clocks", Status: StatusPass,
				Message: fmt.Sprintf("no GPU's SM clock under load more than %.0f%% below its model's median across %d hosts", margin*100, len(hosts))}}
		}
	}
	return out
}

func judgeClocks(samples []Sample, lim Limits) []Finding {
	values := ClockValues("node", samples)
	if len(values) == 0 {
		return nil
	}
	if len(values) < outlier.MinPeers {
		return []Finding{{Check: "burnin.clocks", Status: StatusPass, Message: fmt.Sprintf("%d GPUs: too few peers to compare clocks under load (%d needed)", len(values), outlier.MinPeers)}}
	}
	margin := lim.ClockMargin
	if margin <= 0 {
		margin = outlier.DefaultMargin
	}
	low := map[string]outlier.Finding{}
	for _, f := range outlier.Flag(values, margin) {
		low[f.Device] = f
	}
	var out []Finding
	for _, v := range values {
		f := Finding{Check: "burnin.clocks", Subject: v.Device, Status: StatusPass, Message: fmt.Sprintf("median SM clock under load %.0f MHz", v.V)}
		if o, ok := low[v.Device]; ok {
			f.Status = StatusFail
			f.Message = fmt.Sprintf("median SM clock under load %.0f MHz, %.0f%% below its %d peers' median %.0f MHz", v.V, o.Worse*100, o.Peers, o.Median)
		}
		out = append(out, f)
	}
	return out
}

func medianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func judgeNCCL(runs []NCCLRun, lim Limits) []Finding {
	maxCV := lim.MaxBusBWVariation
	if maxCV <= 0 {
		maxCV = DefaultBusBWVariation
	}
	var out []Finding
	for _, r := range runs {
		f := Finding{Check: "burnin.nccl", Subject: r.Name, Status: StatusPass}
		var wrong int64
		for _, w := range r.Wrong {
			wrong += w
		}
		mean, cv := variation(r.BusBWGBs)
		switch {
		case len(r.Failures) > 0:
			f.Status, f.Message = StatusFail, fmt.Sprintf("%d of %d iterations failed: %s", len(r.Failures), len(r.Failures)+len(r.BusBWGBs), r.Failures[0])
		case len(r.BusBWGBs) < 2:
			f.Status, f.Message = StatusNotRun, fmt.Sprintf("%d iterations measured: a long run's variance needs two or more", len(r.BusBWGBs))
		case wrong > 0:
			f.Status, f.Message = StatusFail, fmt.Sprintf("#wrong %d over %d iterations: data corrupted in transit", wrong, len(r.BusBWGBs))
		case cv > maxCV:
			lo, hi := slices.Min(r.BusBWGBs), slices.Max(r.BusBWGBs)
			f.Status, f.Message = StatusFail, fmt.Sprintf("busbw varied %.1f%% across %d iterations (%.1f-%.1f GB/s, mean %.1f; at most %.0f%%)", cv*100, len(r.BusBWGBs), lo, hi, mean, maxCV*100)
		default:
			f.Message = fmt.Sprintf("%d iterations, #wrong 0, busbw mean %.1f GB/s varied %.1f%%", len(r.BusBWGBs), mean, cv*100)
		}
		out = append(out, f)
	}
	return out
}

// variation is the mean and the coefficient of variation (population
// standard deviation over the mean).
func variation(v []float64) (mean, cv float64) {
	if len(v) == 0 {
		return 0, 0
	}
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if mean <= 0 {
		return mean, math.Inf(1)
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss/float64(len(v))) / mean
}

// judgeCounters fails every error counter that rose during the burn-in.
// A counter read before and not after (a GPU that fell off the bus) is a
// failure too: its errors can no longer be told.
func judgeCounters(before, after map[string]uint64) []Finding {
	if before == nil || after == nil {
		return []Finding{{Check: "burnin.counters", Status: StatusNotRun, Message: "the error counters were not read before and after the load"}}
	}
	if len(before) == 0 && len(after) == 0 {
		return []Finding{{Check: "burnin.counters", Status: StatusNotRun, Message: "no PCIe AER, ECC or NVLink error counter of a GPU was readable (aer_dev_* under /sys/bus/pci/devices, NVML): errors during the load could not be counted"}}
	}
	var rose []string
	for _, k := range sortedKeysU(before) {
		a, ok := after[k]
		switch {
		case !ok:
			rose = append(rose, k+" no longer readable")
		case a > before[k]:
			rose = append(rose, fmt.Sprintf("%s +%d", k, a-before[k]))
		case a < before[k]:
			rose = append(rose, fmt.Sprintf("%s reset (%d to %d)", k, before[k], a))
		}
	}
	for _, k := range sortedKeysU(after) {
		if _, ok := before[k]; !ok && after[k] > 0 {
			rose = append(rose, fmt.Sprintf("%s %d (not readable before)", k, after[k]))
		}
	}
	if len(rose) > 0 {
		return []Finding{{Check: "burnin.counters", Status: StatusFail, Message: "error counters rose during the load: " + strings.Join(rose, "; ")}}
	}
	return []Finding{{Check: "burnin.counters", Status: StatusPass, Message: fmt.Sprintf("%d PCIe AER, ECC and NVLink error counters unchanged", len(before))}}
}

func sortedKeysU(m map[string]uint64) []string {
	k := make([]string, 0, len(m))
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

// Counters names the error counters of an NVML report that a burn-in
// compares before and after: each GPU's volatile uncorrectable ECC count,
// keyed "bus/ecc_volatile_uncorrected", and each active NVLink link's
// data-link error counters, keyed "bus/nvlinkN_replay", "_recovery",
// "_crc_flit" and "_crc_data". AER counters are added by AddAER from the
// node's sysfs.
func Counters(rep *nvmlfacts.Report) map[string]uint64 {
	if rep == nil {
		return nil
	}
	m := map[string]uint64{}
	for _, g := range rep.GPUs {
		if g.ECC != nil && g.ECC.VolatileUncorrected != nil {
			m[g.BusID+"/ecc_volatile_uncorrected"] = *g.ECC.VolatileUncorrected
		}
		for _, l := range g.NVLinks {
			if l.Errors == nil {
				continue
			}
			k := fmt.Sprintf("%s/nvlink%d_", g.BusID, l.Link)
			m[k+"replay"], m[k+"recovery"] = l.Errors.Replay, l.Errors.Recovery
			m[k+"crc_flit"], m[k+"crc_data"] = l.Errors.CRCFlit, l.Errors.CRCData
		}
	}
	return m
}

// AddCounters adds the NVML counters of rep (Counters) to m, the AER
// counters read at the same time; nil stays nil (not read).
func AddCounters(m map[string]uint64, rep *nvmlfacts.Report) map[string]uint64 {
	if m == nil {
		return nil
	}
	for k, v := range Counters(rep) {
		m[k] = v
	}
	return m
}

// AddAER adds one PCIe device's AER totals to m, read from the kernel's
// sysfs files aer_dev_correctable, aer_dev_nonfatal and aer_dev_fatal
// (lines "NAME COUNT", the total on the TOTAL_ERR_* line), keyed
// "bus/aer_correctable" and so on. A file whose total cannot be read is
// an error: a counter that was not read cannot be said to be unchanged.
func AddAER(m map[string]uint64, bus, kind string, file []byte) error {
	for _, line := range strings.Split(string(file), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && strings.HasPrefix(f[0], "TOTAL_ERR_") {
			var n uint64
			if _, err := fmt.Sscan(f[1], &n); err != nil {
				return fmt.Errorf("%s aer_dev_%s: %q is not a count", bus, kind, f[1])
			}
			m[bus+"/aer_"+kind] = n
			return nil
		}
	}
	return fmt.Errorf("%s aer_dev_%s: no TOTAL_ERR_ line", bus, kind)
}
