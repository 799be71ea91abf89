package verify

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// checkNVMLIdentified judges a report whose GPU indexes identify already
// made the spec's (identify).
func checkNVMLIdentified(exp Expectation, rep *nvmlfacts.Report, id gpuIdentity) []CheckResult {
	var out []CheckResult
	if exp.GPUCount > 0 {
		r := CheckResult{ID: string(CheckGPUCount), Observed: strconv.Itoa(len(rep.GPUs)), Expected: strconv.Itoa(exp.GPUCount), Status: StatusPass}
		if len(rep.GPUs) != exp.GPUCount {
			r.Status = StatusFail
			r.Message = fmt.Sprintf("NVML sees %d GPUs, the spec expects %d", len(rep.GPUs), exp.GPUCount)
			if len(id.missing) > 0 {
				// The spec's hardware says which GPU is gone.
				r.Message += "; missing: " + id.missingText()
			}
			if len(rep.GPUs) < exp.GPUCount {
				r.Message += " (a GPU fell off the bus or its driver failed; see dmesg for XID 79)"
			}
		}
		out = append(out, r)
	}
	if exp.GPUModel != "" {
		r := CheckResult{ID: string(CheckGPUModel), Expected: exp.GPUModel, Status: StatusPass}
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
		r := CheckResult{ID: string(CheckDriverVersion), Observed: rep.DriverVersion, Expected: exp.DriverVersion, Status: StatusPass}
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
				unreported(r, rep, &rep.GPUs[i])
				out = append(out, *r)
			}
		}
	}
	out = append(out, checkNVLinkPairs(exp, rep)...)
	out = append(out, checkNUMA(exp, rep, id)...)
	out = append(out, checkNIC(exp, rep, id)...)
	// The nvidia-smi fallback cannot see some facts: the check the spec
	// asked for is not made, which is an error that says why, never a
	// pass nor a skip (the gate would pass what nobody checked).
	// Which checks are blind is declared in Checks() (CheckDef.Fact).
	blind := map[string]bool{}
	for _, d := range Checks() {
		if d.Fact != "" && !rep.Collected(d.Fact) {
			blind[string(d.ID)] = true
		}
	}
	emitted := map[string]bool{}
	for _, r := range out {
		emitted[r.ID] = true
	}
	for i := range out {
		base, gpu, _ := strings.Cut(out[i].ID, "[")
		if !blind[base] {
			continue
		}
		if by, ok := blindCoveredBy[CheckID(base)]; ok && emitted[string(by)+"["+gpu] {
			// Another check judges the same expectation from what this
			// path does show: a skip that names it, not an error.
			out[i] = CheckResult{ID: out[i].ID, Status: StatusSkip, Expected: out[i].Expected,
				Message: "not available from " + rep.Source + " (the NVML agent could not run); " + string(by) + "[" + gpu + " judges it on this path"}
			continue
		}
		out[i] = CheckResult{ID: out[i].ID, Status: StatusError, Expected: out[i].Expected,
			Message: "could not tell: not available from " + rep.Source + " (the NVML agent could not run; see nvml.facts)"}
	}
	return out
}

// blindCoveredBy names, for a check the nvidia-smi fallback is blind to,
// the per-GPU check that judges the same expectation from what that path
// shows. Where the covering check was emitted for the GPU, the blind one
// is a skip naming it; elsewhere it is an error. (nvml.nvlink's per-link
// state is covered by topo -m's NV# counts where a check judges them.)
var blindCoveredBy = map[CheckID]CheckID{CheckNVLink: CheckNVLinkPairs}

func describeSource(rep *nvmlfacts.Report) string {
	switch rep.Source {
	case nvmlfacts.SourceMock:
		return "simulated NVML (" + rep.Mock + ")"
	case nvmlfacts.SourceNvidiaSMI:
		return "nvidia-smi -q -x (agent could not run)"
	}
	return "NVML agent"
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

// nvmlCalls are the NVML queries each per-GPU check reads, as the agent
// names them in its warnings ("gpu3: GetTemperature: ERROR_UNKNOWN").
var nvmlCalls = map[CheckID][]string{
	CheckPersistenceMode:  {"GetPersistenceMode"},
	CheckECCMode:          {"GetEccMode"},
	CheckECCUncorrectable: {"GetEccMode", "GetTotalEccErrors(volatile)", "GetTotalEccErrors(aggregate)"},
	CheckRowRemap:         {"GetRemappedRows", "GetRetiredPages", "GetRetiredPagesPendingStatus"},
	CheckPCIeLink:         {"GetCurrPcieLinkGeneration", "GetMaxPcieLinkGeneration", "GetCurrPcieLinkWidth", "GetMaxPcieLinkWidth"},
	CheckTemperature:      {"GetTemperature"},
	CheckThrottle:         {"GetCurrentClocksEventReasons"},
	CheckMIGMode:          {"GetMigMode"},
}

// unreported settles a per-GPU check skipped because the GPU reported
// no value for the fact it judges. The NVML agent leaves a value out in
// two cases, which its warnings tell apart: the GPU does not have the
// feature (NVML answers NOT_SUPPORTED, no warning), or the query failed
// (a warning naming the GPU and the call). A failed query is an error
// that quotes the warning: the check the gate needed was not made. A
// feature the GPU lacks stays a skip (not applicable), except for a mode
// the spec asks for: a GPU without the mode satisfies "off" and fails
// "on", as nvml.mig_mode does.
func unreported(r *CheckResult, rep *nvmlfacts.Report, g *nvmlfacts.GPU) {
	if r.Status != StatusSkip {
		return
	}
	base, _, _ := strings.Cut(r.ID, "[")
	for _, call := range nvmlCalls[CheckID(base)] {
		prefix := fmt.Sprintf("gpu%d: %s: ", g.Index, call)
		for _, w := range rep.Warnings {
			if strings.HasPrefix(w, prefix) {
				r.Status, r.Message = StatusError, "could not tell: NVML's "+call+" failed ("+strings.TrimPrefix(w, prefix)+")"
				return
			}
		}
	}
	switch CheckID(base) {
	case CheckPersistenceMode, CheckECCMode:
		if r.Expected == "disabled" {
			r.Status, r.Observed, r.Message = StatusPass, "not supported", ""
		} else {
			r.Status, r.Observed, r.Message = StatusFail, "not supported", "the spec wants it enabled, and this GPU does not support it"
		}
	}
}
