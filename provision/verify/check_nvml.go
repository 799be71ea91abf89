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

func checkNVML(exp Expectation, rep *nvmlfacts.Report) []CheckResult {
	rep, id := identify(exp, rep)
	return checkNVMLIdentified(exp, rep, id)
}

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
				out = append(out, *r)
			}
		}
	}
	out = append(out, checkNVLinkPairs(exp, rep)...)
	out = append(out, checkNUMA(exp, rep, id)...)
	out = append(out, checkNIC(exp, rep, id)...)
	// The nvidia-smi fallback cannot see some facts: say so instead of
	// failing the node on a blind spot of the fallback.
	// Which checks are blind is declared in Checks() (CheckDef.Fact).
	blind := map[string]bool{}
	for _, d := range Checks() {
		if d.Fact != "" && !rep.Collected(d.Fact) {
			blind[string(d.ID)] = true
		}
	}
	for i := range out {
		if base, _, _ := strings.Cut(out[i].ID, "["); blind[base] {
			out[i] = CheckResult{ID: out[i].ID, Status: StatusSkip, Expected: out[i].Expected,
				Message: "not available from " + rep.Source + " (the NVML agent could not run)"}
		}
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
