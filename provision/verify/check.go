package verify

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/gpuform/gpuform/provision/verify/dcgm"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/spec"
)

// Status is the outcome of one check.
type Status string

// Check outcomes. A failed check means the node is not what the spec says;
// an error means gpuform could not tell.
const (
	StatusPass  Status = "pass"
	StatusFail  Status = "fail"
	StatusSkip  Status = "skip"
	StatusError Status = "error"
)

// CheckResult is one judged fact. ID is stable across releases so that
// pipelines can match on it, e.g. "nvml.gpu_count" or "nvml.pcie_link[gpu3]".
type CheckResult struct {
	// ID names the check; per-GPU checks end in "[gpuN]".
	ID string `json:"id"`
	// Status is pass, fail, skip or error.
	Status Status `json:"status"`
	// Observed is what the node showed; "" when nothing was observed. Always
	// present in JSON, so consumers read one shape.
	Observed string `json:"observed"`
	// Expected is what the spec asked for; always present in JSON.
	Expected string `json:"expected"`
	// Message explains a failure, skip or error in words.
	Message string `json:"message,omitempty"`
}

// NVLinkExpectation says what NVLink state a node must show.
type NVLinkExpectation string

// NVLink expectations.
const (
	// NVLinkUnchecked leaves NVLink unjudged.
	NVLinkUnchecked NVLinkExpectation = ""
	// NVLinkAllActive requires every NVLink of every GPU to be active
	// (NVLink bridge and NVSwitch systems).
	NVLinkAllActive NVLinkExpectation = "all_active"
	// NVLinkNone requires no active NVLink (PCIe-only systems).
	NVLinkNone NVLinkExpectation = "none"
)

// Interconnect is how the GPUs of a node talk to each other; it selects
// rows of the threshold catalogue.
type Interconnect string

// Interconnects known to the threshold catalogue.
const (
	InterconnectNVSwitch     Interconnect = "nvswitch"
	InterconnectNVLinkBridge Interconnect = "nvlink_bridge"
	InterconnectPCIe         Interconnect = "pcie"
)

// NICExpectation pairs a GPU with the NIC it should use.
type NICExpectation struct {
	// NIC is the NIC's name as the agent reports it, e.g. "mlx5_0".
	NIC string
	// Allowed lists acceptable common ancestors; nil means PIX or PXB
	// (GPUDirect RDMA wants the GPU and NIC under one PCIe switch; a path
	// across the CPU, let alone the socket interconnect, costs bandwidth).
	Allowed []nvmlfacts.Level
}

// NCCLExpectation is one configured nccl-tests run.
type NCCLExpectation struct {
	// Name is the label from the spec; the check id is "nccl.<Name>".
	Name string
	// Command is the nccl-tests command line.
	Command string
	// MinBusBWGBps is the floor in GB/s; 0 takes it from the threshold catalogue.
	MinBusBWGBps float64
	// Timeout bounds the run; 0 means the tier's budget decides.
	Timeout time.Duration
	// MultiNode marks a run launched across hosts (mpirun/srun); it only
	// runs at the fleet tier.
	MultiNode bool
}

// Expectation is what a node must be, as the caller read it from a spec.
// Zero values mean "not checked" unless the field says otherwise.
type Expectation struct {
	// GPUCount is the number of GPUs NVML must enumerate.
	GPUCount int
	// GPUModel must appear in every GPU's name as whole words,
	// case-insensitively (e.g. "H100"; real drivers print "NVIDIA H100
	// 80GB HBM3"): "A10" does not match an A100, nor "L4" an L40S.
	GPUModel string
	// Interconnect selects catalogue floors for NCCL tests.
	Interconnect Interconnect
	// DriverVersion is the pinned driver version, compared exactly.
	DriverVersion string
	// PersistenceMode, when set, is the required persistence mode.
	PersistenceMode *bool
	// ECC, when set, is the required ECC mode. Uncorrectable ECC errors,
	// pending row remaps and remap failures are always checked.
	ECC *bool
	// MinPCIeGen is the lowest acceptable PCIe generation; 0 means each
	// GPU's own maximum.
	MinPCIeGen int
	// MinPCIeWidth is the narrowest acceptable link; 0 means each GPU's
	// maximum width.
	MinPCIeWidth int
	// NVLink is the required NVLink state.
	NVLink NVLinkExpectation
	// NUMANode maps GPU index to the NUMA node it must sit on.
	NUMANode map[int]int
	// NIC maps GPU index to its paired NIC.
	NIC map[int]NICExpectation
	// MaxTemperatureC is the highest acceptable GPU temperature; 0 skips.
	MaxTemperatureC int
	// ForbiddenThrottle lists throttle reasons that fail a GPU; nil means
	// DefaultForbiddenThrottle().
	ForbiddenThrottle []string
	// MIG, when set, is the required MIG mode.
	MIG *bool
	// FatalXIDs lists XIDs that fail the node when seen in the listening
	// window; nil means DefaultFatalXIDs().
	FatalXIDs []uint64
	// FabricManager, when set, says whether nvidia-fabricmanager must be running.
	FabricManager *bool
	// Peermem, when set, says whether nvidia-peermem must be loaded.
	Peermem *bool
	// DCGM is true when the spec pins DCGM: then a node without dcgmi
	// fails dcgm.diag at the quick tier instead of skipping it.
	DCGM bool
	// NCCL lists the nccl-tests runs.
	NCCL []NCCLExpectation

	// Sensitive names the checks (IDs without the "[gpuN]" suffix) whose
	// expectation comes from a sensitive spec value: their expected and
	// observed values and message read spec.Redacted, since an observed
	// value that matches is the secret.
	Sensitive map[string]bool
	// Redactor hides the node's sensitive values in every other message.
	Redactor *spec.Redactor
}

// DefaultForbiddenThrottle is the set of throttle reasons that mean a
// hardware or cooling problem: hardware slowdown, thermal slowdown (hardware
// or software) and power-brake slowdown. Idle, application clocks, software
// power cap and sync boost are normal operation and not listed.
func DefaultForbiddenThrottle() []string {
	return []string{
		nvmlfacts.ThrottleHWSlowdown,
		nvmlfacts.ThrottleHWThermalSlowdown,
		nvmlfacts.ThrottleSWThermalSlowdown,
		nvmlfacts.ThrottleHWPowerBrakeSlowdown,
	}
}

// DefaultFatalXIDs are the XIDs Azure's GPU health checks fail a node on
// (customTests/azure_gpu_xid.nhc in
// https://github.com/Azure/azurehpc-health-checks at commit
// 0e0a1ac26a64b32ac4dd7632a529638505d3314a, as quoted in
// shared/reference/verification.md section 2).
func DefaultFatalXIDs() []uint64 {
	return []uint64{48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 119, 120}
}

// HostFacts are the facts besides NVML that checks need.
type HostFacts struct {
	// NVMLError says why no NVML report could be read (agent failed and
	// the nvidia-smi fallback too); it fails nvml.facts.
	NVMLError string
	// FabricManagerActive is whether nvidia-fabricmanager is running; nil
	// when unknown.
	FabricManagerActive *bool
	// PeermemLoaded is whether the nvidia-peermem module is loaded; nil
	// when unknown.
	PeermemLoaded *bool
	// NCCL holds nccl-tests results by NCCLExpectation.Name; a test not in
	// the map was not run (tier) and is skipped.
	NCCL map[string]nccltest.Result
	// DCGM is the `dcgmi diag` run of the quick tier and deeper; nil when
	// it was not run (probe tier), which emits no DCGM check.
	DCGM *dcgm.Result
	// Catalogue supplies NCCL floors; nil means the embedded catalogue.
	Catalogue *Catalogue
}

// gpuID formats a per-GPU check id.
func gpuID(check string, gpu int) string { return fmt.Sprintf("nvml.%s[gpu%d]", check, gpu) }

// Check judges a node. rep may be nil when no NVML facts could be read:
// then nvml.facts fails with extra.NVMLError and the NVML checks are
// skipped, while host and NCCL checks still run. The result order is
// stable: node-wide NVML checks, per-GPU checks grouped by check and sorted
// by GPU, then host checks, then DCGM checks, then NCCL checks.
func Check(exp Expectation, rep *nvmlfacts.Report, extra HostFacts) []CheckResult {
	var out []CheckResult
	if rep == nil {
		msg := extra.NVMLError
		if msg == "" {
			msg = "no NVML facts were collected"
		}
		out = append(out, CheckResult{ID: "nvml.facts", Status: StatusFail, Expected: "NVML report", Message: msg})
	} else {
		out = append(out, CheckResult{ID: "nvml.facts", Status: StatusPass, Observed: describeSource(rep), Message: strings.Join(rep.Warnings, "; ")})
		out = append(out, checkNVML(exp, rep)...)
	}
	out = append(out, checkHost(exp, extra)...)
	out = append(out, checkDCGM(extra.DCGM, exp.DCGM)...)
	out = append(out, checkNCCL(exp, rep, extra)...)
	return redactResults(exp, out)
}

// redactResults hides sensitive expectations and what was compared with
// them; the status still says whether the node matched.
func redactResults(exp Expectation, out []CheckResult) []CheckResult {
	hide := func(s string) string {
		if s == "" {
			return s
		}
		return spec.Redacted
	}
	for i := range out {
		r := &out[i]
		base, _, _ := strings.Cut(r.ID, "[")
		if exp.Sensitive[base] {
			r.Expected, r.Observed, r.Message = hide(r.Expected), hide(r.Observed), hide(r.Message)
			continue
		}
		r.Expected = exp.Redactor.Redact(r.Expected)
		r.Observed = exp.Redactor.Redact(r.Observed)
		r.Message = exp.Redactor.Redact(r.Message)
	}
	return out
}

// checkDCGM turns a dcgmi diag run into one check per DCGM test, id
// "dcgm.<test>" (lower case, spaces as underscores). DCGM's Warn passes
// with its warning as the message: DCGM itself does not fail the run on it.
//
// A node without dcgmi is skipped, unless the spec pins DCGM (required):
// then the missing tool is itself the failure.
func checkDCGM(res *dcgm.Result, required bool) []CheckResult {
	if res == nil {
		return nil
	}
	level := fmt.Sprintf("dcgmi diag -r %d", res.Level)
	switch {
	case res.NotInstalled && required:
		return []CheckResult{{ID: "dcgm.diag", Status: StatusFail, Observed: "dcgmi not installed", Expected: level + " passes", Message: "the spec pins DCGM, but dcgmi is not installed on the node"}}
	case res.NotInstalled:
		return []CheckResult{{ID: "dcgm.diag", Status: StatusSkip, Expected: level + " passes", Message: "dcgmi is not installed on the node"}}
	case res.Diag == nil || (res.Failure != "" && len(res.Diag.Tests) == 0):
		return []CheckResult{{ID: "dcgm.diag", Status: StatusError, Expected: level + " passes", Message: res.Failure}}
	}
	var out []CheckResult
	if res.Failure != "" {
		out = append(out, CheckResult{ID: "dcgm.diag", Status: StatusError, Expected: level + " passes", Message: res.Failure})
	}
	for _, t := range res.Diag.Tests {
		r := CheckResult{ID: "dcgm." + strings.ReplaceAll(strings.ToLower(t.Name), " ", "_"), Observed: t.Status, Expected: "Pass"}
		switch t.Status {
		case "Pass", "Warn":
			r.Status = StatusPass
		case "Skip", "":
			r.Status, r.Message = StatusSkip, "DCGM skipped this test"
		default:
			r.Status = StatusFail
			var gpus []string
			for _, id := range t.FailedGPUs() {
				gpus = append(gpus, fmt.Sprintf("gpu%d", id))
			}
			r.Message = "DCGM " + t.Category + " test " + t.Name + " failed"
			if len(gpus) > 0 {
				r.Message += " on " + strings.Join(gpus, ", ")
			}
		}
		if len(t.Warnings) > 0 && r.Status != StatusSkip {
			if r.Message != "" {
				r.Message += ": "
			}
			r.Message += strings.Join(t.Warnings, "; ")
		}
		out = append(out, r)
	}
	return out
}

func describeSource(rep *nvmlfacts.Report) string {
	switch rep.Source {
	case nvmlfacts.SourceMock:
		return "simulated NVML (" + rep.Mock + ")"
	case nvmlfacts.SourceNvidiaSMI:
		return "nvidia-smi -q -x (agent could not run)"
	}
	return "NVML agent"
}

func checkNVML(exp Expectation, rep *nvmlfacts.Report) []CheckResult {
	var out []CheckResult
	if exp.GPUCount > 0 {
		r := CheckResult{ID: "nvml.gpu_count", Observed: strconv.Itoa(len(rep.GPUs)), Expected: strconv.Itoa(exp.GPUCount), Status: StatusPass}
		if len(rep.GPUs) != exp.GPUCount {
			r.Status = StatusFail
			r.Message = fmt.Sprintf("NVML sees %d GPUs, the spec expects %d", len(rep.GPUs), exp.GPUCount)
			if len(rep.GPUs) < exp.GPUCount {
				r.Message += " (a GPU fell off the bus or its driver failed; see dmesg for XID 79)"
			}
		}
		out = append(out, r)
	}
	if exp.GPUModel != "" {
		r := CheckResult{ID: "nvml.gpu_model", Expected: exp.GPUModel, Status: StatusPass}
		names := map[string]bool{}
		var wrong []string
		for _, g := range rep.GPUs {
			names[g.Name] = true
			if !nameHasModel(g.Name, exp.GPUModel) {
				wrong = append(wrong, fmt.Sprintf("gpu%d", g.Index))
			}
		}
		r.Observed = strings.Join(slices.Sorted(maps.Keys(names)), ", ")
		if len(wrong) > 0 {
			r.Status = StatusFail
			r.Message = "not a " + exp.GPUModel + ": " + strings.Join(wrong, ", ")
		}
		out = append(out, r)
	}
	if exp.DriverVersion != "" {
		r := CheckResult{ID: "nvml.driver_version", Observed: rep.DriverVersion, Expected: exp.DriverVersion, Status: StatusPass}
		if rep.DriverVersion != exp.DriverVersion {
			r.Status = StatusFail
			r.Message = "the loaded driver is not the pinned one"
		}
		out = append(out, r)
	}
	out = append(out, checkXID(exp, rep)...)

	perGPU := []func(Expectation, *nvmlfacts.GPU) *CheckResult{
		checkPersistence, checkECCMode, checkECCErrors, checkRowRemap, checkPCIe, checkNVLink,
		checkTemperature, checkThrottle, checkMIG,
	}
	for _, fn := range perGPU {
		for i := range rep.GPUs {
			if r := fn(exp, &rep.GPUs[i]); r != nil {
				out = append(out, *r)
			}
		}
	}
	out = append(out, checkNUMA(exp, rep)...)
	out = append(out, checkNIC(exp, rep)...)
	// The nvidia-smi fallback cannot see some facts: say so instead of
	// failing the node on a blind spot of the fallback.
	for i := range out {
		for _, blind := range []struct{ fact, prefix string }{
			{nvmlfacts.FactNVLink, "nvml.nvlink["},
			{nvmlfacts.FactNUMA, "nvml.numa_node["},
			{nvmlfacts.FactTopology, "nvml.gpu_nic["},
		} {
			if !rep.Collected(blind.fact) && strings.HasPrefix(out[i].ID, blind.prefix) {
				out[i] = CheckResult{ID: out[i].ID, Status: StatusSkip, Expected: out[i].Expected,
					Message: "not available from " + rep.Source + " (the NVML agent could not run)"}
			}
		}
	}
	return out
}

func checkXID(exp Expectation, rep *nvmlfacts.Report) []CheckResult {
	if rep.XID == nil {
		return nil
	}
	fatal := exp.FatalXIDs
	if fatal == nil {
		fatal = DefaultFatalXIDs()
	}
	r := CheckResult{ID: "nvml.xid", Status: StatusPass, Expected: "no fatal XID in " + (time.Duration(rep.XID.WindowMS) * time.Millisecond).String()}
	var seen, bad []string
	for _, e := range rep.XID.Events {
		s := fmt.Sprintf("XID %d on gpu%d", e.XID, e.GPU)
		seen = append(seen, s)
		if slices.Contains(fatal, e.XID) {
			bad = append(bad, s)
		}
	}
	r.Observed = "none"
	if len(seen) > 0 {
		r.Observed = strings.Join(seen, ", ")
	}
	if len(bad) > 0 {
		r.Status = StatusFail
		r.Message = "fatal XID seen: " + strings.Join(bad, ", ") + " (drain the node; NVIDIA's XID catalogue says what each needs)"
	}
	return []CheckResult{r}
}

func checkPersistence(exp Expectation, g *nvmlfacts.GPU) *CheckResult {
	if exp.PersistenceMode == nil {
		return nil
	}
	return boolCheck(gpuID("persistence_mode", g.Index), g.PersistenceMode, *exp.PersistenceMode, "enabled", "disabled")
}

func checkECCMode(exp Expectation, g *nvmlfacts.GPU) *CheckResult {
	if exp.ECC == nil {
		return nil
	}
	var cur *bool
	if g.ECC != nil {
		cur = &g.ECC.Enabled
	}
	r := boolCheck(gpuID("ecc_mode", g.Index), cur, *exp.ECC, "enabled", "disabled")
	if r.Status == StatusFail && g.ECC != nil && g.ECC.PendingEnabled == *exp.ECC {
		r.Message += " (the change is pending: reboot or reset the GPU)"
	}
	return r
}

func boolCheck(id string, got *bool, want bool, on, off string) *CheckResult {
	word := func(b bool) string {
		if b {
			return on
		}
		return off
	}
	r := &CheckResult{ID: id, Expected: word(want)}
	switch {
	case got == nil:
		r.Status = StatusSkip
		r.Message = "not reported by this GPU or driver"
	case *got == want:
		r.Status, r.Observed = StatusPass, word(*got)
	default:
		r.Status, r.Observed = StatusFail, word(*got)
		r.Message = "is " + word(*got) + ", the spec wants " + word(want)
	}
	return r
}

func checkECCErrors(_ Expectation, g *nvmlfacts.GPU) *CheckResult {
	r := &CheckResult{ID: gpuID("ecc_uncorrectable", g.Index), Expected: "0 volatile, 0 aggregate"}
	if g.ECC == nil || (g.ECC.VolatileUncorrected == nil && g.ECC.AggregateUncorrected == nil) {
		r.Status, r.Message = StatusSkip, "no ECC counters (ECC off or not supported)"
		return r
	}
	v, a := "n/a", "n/a"
	bad := false
	if p := g.ECC.VolatileUncorrected; p != nil {
		v = strconv.FormatUint(*p, 10)
		bad = bad || *p > 0
	}
	if p := g.ECC.AggregateUncorrected; p != nil {
		a = strconv.FormatUint(*p, 10)
		bad = bad || *p > 0
	}
	r.Observed = v + " volatile, " + a + " aggregate"
	r.Status = StatusPass
	if bad {
		r.Status = StatusFail
		r.Message = "uncorrectable memory errors on " + g.BusID
	}
	return r
}

func checkRowRemap(_ Expectation, g *nvmlfacts.GPU) *CheckResult {
	r := &CheckResult{ID: gpuID("row_remap", g.Index), Expected: "no pending remap, no remap failure"}
	switch {
	case g.RemappedRows != nil:
		rr := g.RemappedRows
		r.Observed = fmt.Sprintf("pending=%t failure=%t uncorrectable_rows=%d", rr.Pending, rr.Failure, rr.Uncorrected)
		switch {
		case rr.Failure:
			r.Status, r.Message = StatusFail, "row remapping failed on "+g.BusID+": the GPU needs service (RMA)"
		case rr.Pending:
			r.Status, r.Message = StatusFail, "a row remap is pending on "+g.BusID+": reset the GPU (or reboot) before use"
		default:
			r.Status = StatusPass
		}
	case g.RetiredPages != nil:
		rp := g.RetiredPages
		r.Expected = "no page retirement pending"
		r.Observed = fmt.Sprintf("pending=%t sbe_pages=%d dbe_pages=%d", rp.Pending, rp.MultipleSingleBit, rp.DoubleBit)
		r.Status = StatusPass
		if rp.Pending {
			r.Status, r.Message = StatusFail, "a page retirement is pending on "+g.BusID+": reboot before use"
		}
	default:
		r.Status, r.Message = StatusSkip, "neither row remapping nor page retirement reported"
	}
	return r
}

func checkPCIe(exp Expectation, g *nvmlfacts.GPU) *CheckResult {
	r := &CheckResult{ID: gpuID("pcie_link", g.Index)}
	p := g.PCIe
	if p == nil {
		r.Status, r.Message = StatusSkip, "PCIe link not reported"
		return r
	}
	wantGen := exp.MinPCIeGen
	if wantGen == 0 {
		wantGen = p.GPUMaxGen
		if wantGen == 0 {
			wantGen = p.MaxGen
		}
	}
	wantWidth := exp.MinPCIeWidth
	if wantWidth == 0 {
		wantWidth = p.MaxWidth
	}
	// An idle GPU drops its link to Gen1 to save power (the lspci fixture
	// shows "2.5GT/s (downgraded)"); what a slot or riser fault caps is the
	// negotiated maximum, so an idle GPU is judged on MaxGen.
	gen, genNote := p.CurrentGen, ""
	if g.Throttle != nil && g.Throttle.Mask&nvmlfacts.ThrottleMask([]string{nvmlfacts.ThrottleGPUIdle}) != 0 && p.MaxGen > gen {
		// Say so: the idle link's trained speed is not measured, and a
		// riser that trains low under load shows only in the NCCL checks.
		gen, genNote = p.MaxGen, fmt.Sprintf(" (idle at Gen%d: the link's maximum is shown; its speed under load is not measured)", p.CurrentGen)
	}
	r.Observed = fmt.Sprintf("Gen%d x%d%s", gen, p.CurrentWidth, genNote)
	r.Expected = fmt.Sprintf("Gen%d x%d", wantGen, wantWidth)
	var bad []string
	if gen < wantGen {
		bad = append(bad, fmt.Sprintf("generation %d below %d", gen, wantGen))
	}
	if p.CurrentWidth < wantWidth {
		bad = append(bad, fmt.Sprintf("width x%d below x%d", p.CurrentWidth, wantWidth))
	}
	r.Status = StatusPass
	if len(bad) > 0 {
		r.Status = StatusFail
		r.Message = "downgraded PCIe link on " + g.BusID + ": " + strings.Join(bad, ", ") + " (reseat the GPU or check the riser/slot)"
		if gen >= p.MaxGen && p.CurrentWidth >= wantWidth && exp.MinPCIeGen == 0 {
			// The link runs at its maximum and that maximum, the lower of
			// GPU and host, is below the GPU's own: a Gen5 GPU in a Gen4
			// server, or a slot capped in the BIOS. Reseating fixes neither.
			r.Message = fmt.Sprintf("PCIe link on %s: the slot or host supports Gen%d, the GPU Gen%d "+
				"(check the BIOS slot setting and the riser; if the platform itself is Gen%d, set min_pcie_gen = %d)",
				g.BusID, p.MaxGen, wantGen, p.MaxGen, p.MaxGen)
		}
	}
	return r
}

func checkNVLink(exp Expectation, g *nvmlfacts.GPU) *CheckResult {
	if exp.NVLink == NVLinkUnchecked {
		return nil
	}
	r := &CheckResult{ID: gpuID("nvlink", g.Index)}
	active := 0
	var down []string
	for _, l := range g.NVLinks {
		if l.Active {
			active++
		} else {
			down = append(down, strconv.Itoa(l.Link))
		}
	}
	r.Observed = fmt.Sprintf("%d/%d links active", active, len(g.NVLinks))
	switch exp.NVLink {
	case NVLinkAllActive:
		r.Expected = "all links active"
		switch {
		case len(g.NVLinks) == 0:
			r.Status, r.Message = StatusFail, "no NVLink reported on "+g.BusID+" (NVLink expected)"
		case len(down) > 0:
			r.Status, r.Message = StatusFail, "NVLink down on "+g.BusID+": link "+strings.Join(down, ", ")
		default:
			r.Status = StatusPass
		}
	case NVLinkNone:
		r.Expected = "no active links"
		r.Status = StatusPass
		if active > 0 {
			r.Status, r.Message = StatusFail, "NVLink active on a node specified as PCIe-only"
		}
	default:
		r.Status, r.Message = StatusError, fmt.Sprintf("unknown NVLink expectation %q", exp.NVLink)
	}
	return r
}

func checkTemperature(exp Expectation, g *nvmlfacts.GPU) *CheckResult {
	if exp.MaxTemperatureC <= 0 {
		return nil
	}
	r := &CheckResult{ID: gpuID("temperature", g.Index), Expected: fmt.Sprintf("<= %d C", exp.MaxTemperatureC)}
	if g.TemperatureC == nil {
		r.Status, r.Message = StatusSkip, "temperature not reported"
		return r
	}
	r.Observed = fmt.Sprintf("%d C", *g.TemperatureC)
	r.Status = StatusPass
	if *g.TemperatureC > exp.MaxTemperatureC {
		r.Status, r.Message = StatusFail, "GPU "+g.BusID+" runs hot (check airflow and fans)"
	}
	return r
}

func checkThrottle(exp Expectation, g *nvmlfacts.GPU) *CheckResult {
	forbidden := exp.ForbiddenThrottle
	if forbidden == nil {
		forbidden = DefaultForbiddenThrottle()
	}
	r := &CheckResult{ID: gpuID("throttle", g.Index), Expected: "none of " + strings.Join(forbidden, ", ")}
	if g.Throttle == nil {
		r.Status, r.Message = StatusSkip, "throttle reasons not reported"
		return r
	}
	r.Observed = "none"
	if len(g.Throttle.Active) > 0 {
		r.Observed = strings.Join(g.Throttle.Active, ", ")
	}
	var bad []string
	for _, a := range g.Throttle.Active {
		if slices.Contains(forbidden, a) {
			bad = append(bad, a)
		}
	}
	r.Status = StatusPass
	if len(bad) > 0 {
		r.Status, r.Message = StatusFail, "GPU "+g.BusID+" is throttled: "+strings.Join(bad, ", ")
	}
	return r
}

func checkMIG(exp Expectation, g *nvmlfacts.GPU) *CheckResult {
	if exp.MIG == nil {
		return nil
	}
	var cur *bool
	if g.MIG != nil {
		cur = &g.MIG.Enabled
	}
	r := boolCheck(gpuID("mig_mode", g.Index), cur, *exp.MIG, "enabled", "disabled")
	switch {
	case r.Status == StatusSkip && !*exp.MIG:
		// A GPU without MIG support satisfies "MIG off".
		r.Status, r.Observed, r.Message = StatusPass, "not supported", ""
	case r.Status == StatusSkip:
		// ... and fails "MIG on": NVML reports no MIG mode on GPUs
		// without MIG (a failed query is a warning in nvml.facts).
		r.Status, r.Observed = StatusFail, "not supported"
		r.Message = "the spec wants MIG enabled, but " + g.BusID + " reports no MIG mode (a GPU without MIG support?)"
	case r.Status == StatusFail && *exp.MIG && g.MIG.PendingEnabled:
		r.Message += " (enabling is pending: reset the GPU)"
	}
	return r
}

func checkNUMA(exp Expectation, rep *nvmlfacts.Report) []CheckResult {
	var out []CheckResult
	for _, idx := range sortedInts(exp.NUMANode) {
		want := exp.NUMANode[idx]
		r := CheckResult{ID: gpuID("numa_node", idx), Expected: strconv.Itoa(want)}
		g := rep.GPUByIndex(idx)
		switch {
		case g == nil:
			r.Status, r.Message = StatusSkip, fmt.Sprintf("gpu%d not present (see nvml.gpu_count)", idx)
		case g.NUMANode == nil:
			r.Status, r.Message = StatusSkip, "NUMA node not reported"
		default:
			r.Observed = strconv.Itoa(*g.NUMANode)
			if g.CPUAffinity != "" {
				r.Observed += " (CPUs " + g.CPUAffinity + ")"
			}
			r.Status = StatusPass
			if *g.NUMANode != want {
				r.Status = StatusFail
				r.Message = fmt.Sprintf("gpu%d (%s) is on NUMA node %d, the spec binds it to node %d", idx, g.BusID, *g.NUMANode, want)
			}
		}
		out = append(out, r)
	}
	return out
}

func checkNIC(exp Expectation, rep *nvmlfacts.Report) []CheckResult {
	var out []CheckResult
	for _, idx := range sortedInts(exp.NIC) {
		want := exp.NIC[idx]
		allowed := want.Allowed
		if allowed == nil {
			allowed = []nvmlfacts.Level{nvmlfacts.LevelPIX, nvmlfacts.LevelPXB}
		}
		names := make([]string, len(allowed))
		for i, l := range allowed {
			names[i] = string(l)
		}
		r := CheckResult{ID: gpuID("gpu_nic", idx), Expected: want.NIC + " at " + strings.Join(names, "|")}
		var pair *nvmlfacts.NICPair
		for i := range rep.NICTopology {
			if p := &rep.NICTopology[i]; p.GPU == idx && p.NIC == want.NIC {
				pair = p
			}
		}
		switch {
		case rep.GPUByIndex(idx) == nil:
			r.Status, r.Message = StatusSkip, fmt.Sprintf("gpu%d not present (see nvml.gpu_count)", idx)
		case pair == nil:
			r.Status, r.Message = StatusFail, fmt.Sprintf("no topology for gpu%d and %s (NIC missing or not passed to the agent)", idx, want.NIC)
		default:
			r.Observed = want.NIC + " at " + string(pair.Level)
			r.Status = StatusPass
			if !slices.Contains(allowed, pair.Level) {
				r.Status = StatusFail
				r.Message = fmt.Sprintf("gpu%d reaches %s through %s: GPUDirect RDMA traffic crosses the CPU", idx, want.NIC, pair.Level)
			}
		}
		out = append(out, r)
	}
	return out
}

func checkHost(exp Expectation, extra HostFacts) []CheckResult {
	var out []CheckResult
	if exp.FabricManager != nil {
		r := boolCheck("host.fabric_manager", extra.FabricManagerActive, *exp.FabricManager, "running", "not running")
		if r.Status == StatusSkip {
			r.Status, r.Message = StatusError, "could not tell whether nvidia-fabricmanager runs"
		} else if r.Status == StatusFail && *exp.FabricManager {
			r.Message = "nvidia-fabricmanager is not running: NVSwitch systems cannot run CUDA work without it"
		}
		out = append(out, *r)
	}
	if exp.Peermem != nil {
		r := boolCheck("host.peermem", extra.PeermemLoaded, *exp.Peermem, "loaded", "not loaded")
		if r.Status == StatusSkip {
			r.Status, r.Message = StatusError, "could not tell whether nvidia-peermem is loaded"
		} else if r.Status == StatusFail && *exp.Peermem {
			r.Message = "nvidia-peermem is not loaded: GPUDirect RDMA is unavailable"
		}
		out = append(out, *r)
	}
	return out
}

func checkNCCL(exp Expectation, rep *nvmlfacts.Report, extra HostFacts) []CheckResult {
	var out []CheckResult
	cat := extra.Catalogue
	for _, t := range exp.NCCL {
		r := CheckResult{ID: "nccl." + t.Name}
		res, ran := extra.NCCL[t.Name]
		floor, floorNote := t.MinBusBWGBps, "from spec"
		var th *Threshold
		if floor == 0 {
			if cat == nil {
				cat = DefaultCatalogue()
			}
			if found, ok := cat.Lookup(modelOf(exp, rep), exp.Interconnect, exp.GPUCount, collectiveOf(t.Command)); ok {
				th = &found
				floor, floorNote = found.MinBusBWGBps, "catalogue: "+found.Platform
			}
		}
		if floor > 0 {
			r.Expected = fmt.Sprintf("busbw >= %.2f GB/s (%s), #wrong 0", floor, floorNote)
		} else {
			r.Expected = "#wrong 0, out of bounds 0 (no busbw floor known; set min_busbw_gbps)"
		}
		if !ran {
			r.Status, r.Message = StatusSkip, "not run at this tier"
			out = append(out, r)
			continue
		}
		v := res.Judge(floor)
		// The catalogue floor was measured at a larger message size than
		// the run reached: busbw grows with size, so judging the smaller
		// size against it would fail a healthy node. The other rules
		// (#wrong, footer, failures) still apply.
		short := th != nil && th.MessageBytes > 0 && v.Size > 0 && v.Size < th.MessageBytes
		if short {
			v = res.Judge(0)
		}
		if v.Size > 0 {
			r.Observed = fmt.Sprintf("busbw %.2f GB/s at %s", v.BusBW, nccltest.FormatSize(v.Size))
			if last := res.Runs[len(res.Runs)-1]; last.NGPUs > 0 && !last.Validation {
				// -c 0: nccl-tests counted no #wrong, so a pass says
				// nothing about data corruption.
				r.Observed += " (not validated: -c 0, #wrong not counted)"
			}
		}
		switch {
		case !v.Pass:
			r.Status, r.Message = StatusFail, strings.Join(v.Reasons, "; ")
		case short:
			// The catalogue floor was measured at a larger message size;
			// a smaller sweep cannot reach it, so it cannot be judged.
			r.Status = StatusError
			r.Message = fmt.Sprintf("the run ends at %s but the catalogue floor is for %s; extend the sweep (-e %s) or set min_busbw_gbps",
				nccltest.FormatSize(v.Size), nccltest.FormatSize(th.MessageBytes), nccltest.FormatSize(th.MessageBytes))
		default:
			r.Status = StatusPass
		}
		out = append(out, r)
	}
	return out
}

// nameHasModel reports whether model's words appear, in order and next to
// each other, among name's words; words are runs of letters and digits,
// compared case-insensitively.
func nameHasModel(name, model string) bool {
	words := func(s string) []string {
		return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r)
		})
	}
	n, m := words(name), words(model)
	if len(m) == 0 {
		return true
	}
	for i := 0; i+len(m) <= len(n); i++ {
		if slices.Equal(n[i:i+len(m)], m) {
			return true
		}
	}
	return false
}

// modelOf picks the GPU model for catalogue lookups: the spec's, else the
// first GPU's name.
func modelOf(exp Expectation, rep *nvmlfacts.Report) string {
	if exp.GPUModel != "" {
		return exp.GPUModel
	}
	if rep != nil && len(rep.GPUs) > 0 {
		return rep.GPUs[0].Name
	}
	return ""
}

// collectiveOf guesses the collective from the test binary name, e.g.
// "all_reduce_perf" → "all_reduce".
func collectiveOf(cmd string) string {
	words, err := nccltest.SplitCommand(cmd)
	if err != nil {
		return ""
	}
	for _, w := range words {
		base := w[strings.LastIndexByte(w, '/')+1:]
		if c, ok := strings.CutSuffix(base, "_perf"); ok {
			return c
		}
	}
	return ""
}

func sortedInts[V any](m map[int]V) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	return keys
}
