package verify

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/spec"
)

// Status is the outcome of one check.
type Status string

// Check outcomes. A failed check means the node is not what the spec says;
// an error means gpuform could not tell. Only pass is a pass: skip and not
// run are never counted as passed, and whether they keep a host from
// passing the gate is Blocks' rule.
const (
	// StatusPass: the check was made and the node matched.
	StatusPass Status = "pass"
	// StatusFail: the check was made and the node is not what the spec
	// says.
	StatusFail Status = "fail"
	// StatusSkip: the check does not apply to this node, and the message
	// says why: the hardware lacks what it judges (no ECC counters with
	// ECC off, no row remapping before Ampere), there is nothing to judge
	// (no compute process on the GPU), the GPU is absent and
	// nvml.gpu_count fails for it, or the spec lists the tool in
	// verify { optional } (or installs no DCGM, for dcgm.diag). A check
	// that could not be made where it applies is never a skip: it is
	// StatusError with the reason.
	StatusSkip Status = "skip"
	// StatusError: gpuform could not tell: a fact the check needs could
	// not be read, a tool the tier runs is missing or did not finish, or
	// the comparison could not be made.
	StatusError Status = "error"
	// StatusNotRun: the check was not run on this host. With Needed
	// false it was left to a deeper tier than the one run (an nccl-tests
	// run at -tier quick); with Needed true the tier run includes it but
	// the host did not take part (a multi-node run that named other
	// hosts, or none that could run for it), so the host has not passed.
	// Its JSON and Prometheus value is "not run"; the text report's tag
	// is "not run". A status added to the 2.x format.
	StatusNotRun Status = "not run"
)

// Blocks reports whether the check keeps its host from passing the gate:
// a fail, an error, or a not-run check the tier needed. pass, skip and a
// not-run check left to a deeper tier do not. A status this gpuform does
// not know blocks, so that the gate fails closed.
func (r CheckResult) Blocks() bool {
	switch r.Status {
	case StatusPass, StatusSkip:
		return false
	case StatusNotRun:
		return r.Needed
	}
	return true
}

// CheckResult is one judged fact. ID is stable across releases so that
// pipelines can match on it, e.g. "nvml.gpu_count" or "nvml.pcie_link[gpu3]".
type CheckResult struct {
	// ID names the check; per-GPU checks end in "[gpuN]".
	ID string `json:"id"`
	// Status is pass, fail, skip, error or not run.
	Status Status `json:"status"`
	// Needed is set on a not-run check the tier run needed (the host did
	// not take part in it): such a check fails the host. Absent on every
	// other check. A field added to the 2.x format.
	Needed bool `json:"needed,omitempty"`
	// Observed is what the node showed; "" when nothing was observed. Always
	// present in JSON, so consumers read one shape.
	Observed string `json:"observed"`
	// Expected is what the spec asked for; always present in JSON.
	Expected string `json:"expected"`
	// ObservedRaw and ExpectedRaw are Observed and Expected as the host's
	// file and the resource write them ("stack=65536"), present only where
	// the human form differs ("stack=64MiB": sizes in the spec's form). A
	// field added to the 2.x format.
	ObservedRaw string `json:"observed_raw,omitempty"`
	ExpectedRaw string `json:"expected_raw,omitempty"`
	// Message explains a failure, skip or error in words.
	Message string `json:"message,omitempty"`
	// GPU identifies the GPU a per-GPU check judged, for an RMA ticket or
	// a drain; nil on node-wide checks and when the GPU is not present.
	GPU *GPURef `json:"gpu,omitempty"`
	// Remedy says what a failure means and what to do (monitor, reset the
	// GPU, reboot, drain for RMA…), from the remediation catalogue; set
	// on failed and errored checks. A field added to the 2.x format.
	Remedy *Remedy `json:"remedy,omitempty"`
}

// GPURef is what identifies one GPU to an operator and to NVIDIA support.
type GPURef struct {
	// Index is the N of "[gpuN]": the index the spec's hardware block
	// gives the GPU at BusID, else NVML's index.
	Index int `json:"index"`
	// NVMLIndex is NVML's index of the GPU where it differs from Index
	// (NVML renumbers the GPUs after one that fell off the bus); nil when
	// they agree. A field added to the 2.x format.
	NVMLIndex *int `json:"nvml_index,omitempty"`
	// BusID is the PCI address as NVML prints it ("00000000:1B:00.0").
	BusID string `json:"pci_bus_id"`
	// UUID is the GPU's UUID ("GPU-…").
	UUID string `json:"uuid,omitempty"`
	// Serial is the board serial number; "" when the GPU does not report one.
	Serial string `json:"serial,omitempty"`
}

// identifyGPUs attaches the judged GPU's identity to every per-GPU result.
func identifyGPUs(rep *nvmlfacts.Report, id gpuIdentity, out []CheckResult) {
	if rep == nil {
		return
	}
	for i := range out {
		d, ok := LookupCheck(out[i].ID)
		if !ok || d.Scope != ScopeGPU {
			continue
		}
		_, n, _ := strings.Cut(out[i].ID, "[gpu")
		idx, err := strconv.Atoi(strings.TrimSuffix(n, "]"))
		if err != nil {
			continue
		}
		if g := rep.GPUByIndex(idx); g != nil {
			out[i].GPU = &GPURef{Index: g.Index, BusID: g.BusID, UUID: g.UUID, Serial: g.Serial}
			if n, ok := id.nvmlIndex[g.Index]; ok && n != g.Index {
				out[i].GPU.NVMLIndex = &n
			}
		}
	}
}

// Check judges a node. rep may be nil when no NVML facts could be read:
// then nvml.facts fails with extra.NVMLError and the NVML checks are
// skipped, while host and NCCL checks still run. The result order is
// stable: node-wide NVML checks, per-GPU checks grouped by check and sorted
// by GPU, then host checks, then the spec's resources as plan compares
// them, then DCGM checks, then NCCL checks.
func Check(exp Expectation, rep *nvmlfacts.Report, extra HostFacts) []CheckResult {
	var out []CheckResult
	if rep == nil {
		msg := extra.NVMLError
		if msg == "" {
			msg = "no NVML facts were collected"
		}
		out = append(out, CheckResult{ID: string(CheckNVMLFacts), Status: StatusFail, Expected: "NVML report", Message: msg})
	}
	// GPUs are judged by the PCI bus id the spec gives them, not by
	// NVML's numbering, which shifts when one falls off the bus.
	rep, id := identify(exp, rep)
	if rep != nil {
		out = append(out, CheckResult{ID: string(CheckNVMLFacts), Status: StatusPass, Observed: describeSource(rep), Message: strings.Join(rep.Warnings, "; ")})
		out = append(out, checkNVMLIdentified(exp, rep, id)...)
		out = append(out, checkProcesses(exp, rep, id, extra.Facts)...)
		out = append(out, checkFabric(exp, rep)...)
		out = append(out, checkVBIOS(exp, rep)...)
	}
	out = append(out, checkKernelXID(exp, extra.Kernel)...)
	out = append(out, checkHost(exp, extra)...)
	out = append(out, checkIMEX(exp, extra)...)
	out = append(out, checkBinding(exp, extra.Facts)...)
	out = append(out, checkSlurmGRES(exp, rep, id, extra)...)
	out = append(out, checkNICIRQ(exp, extra.Facts)...)
	out = append(out, checkNICMTU(exp, extra.Facts)...)
	out = append(out, checkNICLinks(exp, extra.Facts)...)
	out = append(out, checkNICFirmware(exp, extra.Facts)...)
	out = append(out, checkBIOS(exp, extra.Facts)...)
	out = append(out, checkBMC(exp, extra.Facts)...)
	out = append(out, checkImages(exp, rep)...)
	out = append(out, checkImageDigests(exp, extra.Facts, extra.ImageContent)...)
	specChecks, pending := checkSpec(exp, extra)
	out = append(out, specChecks...)
	explainPending(out, pending)
	out = append(out, dcgmDefaultOptional(exp, checkDCGM(exp.KB, extra.DCGM, exp.DCGM, exp.DCGMOptional || exp.DCGMNotInstalled))...)
	out = append(out, checkNCCL(exp, rep, extra)...)
	confirmIMEX(exp, out)
	identifyGPUs(rep, id, out)
	attachRemedies(exp.KB, out, rep, extra)
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
	hidden := 0
	for i := range out {
		r := &out[i]
		// The id is the second line of defence's too: a name that carries
		// a sensitive value (a check named after it that does not name
		// itself by index) becomes "sensitive-K", K counting such ids.
		if red := exp.Redactor.Redact(r.ID); red != r.ID {
			hidden++
			r.ID = sensitiveID(r.ID, hidden)
		}
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

// sensitiveID is id with the name after its check's CheckID replaced by
// "sensitive-K" (the whole id when no CheckID is its prefix).
func sensitiveID(id string, k int) string {
	for _, d := range Checks() {
		if strings.HasPrefix(id, string(d.ID)+".") {
			return fmt.Sprintf("%s.sensitive-%d", d.ID, k)
		}
	}
	return fmt.Sprintf("sensitive-%d", k)
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

// DCGMOptionalNote is what plan and verify say where dcgm.diag is optional
// because the spec installs no DCGM: never silently.
const DCGMOptionalNote = spec.DCGMOptionalNote

// dcgmDefaultOptional words the skip of a node without dcgmi whose spec
// installs no DCGM and does not list it in verify { optional }: optional
// by default, and saying so.
func dcgmDefaultOptional(exp Expectation, out []CheckResult) []CheckResult {
	if exp.DCGMOptional || !exp.DCGMNotInstalled {
		return out
	}
	for i := range out {
		if out[i].ID == string(CheckDCGMDiag) && out[i].Status == StatusSkip {
			out[i].Message = DCGMOptionalNote + ": dcgmi is not installed on the node, so this tier ran no DCGM diagnostics (a dcgm block installs DCGM and makes them required)"
		}
	}
	return out
}
