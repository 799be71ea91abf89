package verify

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/verify/kmsg"
)

// takesOut reports whether an action needs the node out of service now.
func takesOut(a kb.Action) bool {
	switch a {
	case kb.ActionResetGPU, kb.ActionReboot, kb.ActionInspect, kb.ActionRMA:
		return true
	}
	return false
}

// unreadableLogRemedy is what an unreadable kernel log needs: gpuform
// cannot tell whether an Xid took the node out, so the host fails
// (docs/security.md) and health mode drains it until dmesg can be read.
func unreadableLogRemedy() *Remedy {
	return &Remedy{Cause: string(CheckKernelXID), Meaning: "the kernel log could not be read, so no Xid could be judged",
		Action: kb.ActionConfig, Do: "let gpuform read the kernel log (dmesg as root; kernel.dmesg_restrict) and look at it: a log of Xid lines past 64 MiB is a broken node",
		Status: kb.Unconfirmed.String(), Source: "none: gpuform's judgement, no NVIDIA source gives an action"}
}

// unknownXidRemedy is what an Xid or SXid gpuform cannot judge gets: one
// its catalogue does not hold, or one NVIDIA's catalogue gives no action
// for. It is never a pass; it fails only when the spec asks (health {
// unknown_xid = "drain" }), and then health mode drains on it (action
// unknown); otherwise the check errors and health mode leaves the node in
// service (action monitor, never counted towards a drain).
func unknownXidRemedy(fail bool) *Remedy {
	r := &Remedy{Cause: "Xid or SXid unknown to this release of gpuform", Meaning: "an Xid or SXid gpuform's catalogue does not hold, or one NVIDIA's catalogue gives no action for",
		Action: kb.ActionMonitor, Do: "look it up in NVIDIA's Xid catalogue (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html) and upgrade gpuform; health mode drains on it only with health { unknown_xid = \"drain\" }",
		Status: kb.Unconfirmed.String(), Source: "none: gpuform's judgement"}
	if fail {
		r.Action, r.Do = kb.ActionUnknown, "drain (health { unknown_xid = \"drain\" }): look it up in NVIDIA's Xid catalogue and upgrade gpuform"
	}
	return r
}

// xidRemedy is the catalogue's answer for one kernel-log event: an NVLink5
// Xid (144-150) by its subcode and error status where the catalogue's
// decode sheet has them, else the Xid's or SXid's own row.
func xidRemedy(kb *kb.KB, e kmsg.Event) (kb.Remedy, bool) {
	if e.Kind == kmsg.KindXid && e.Subcode != "" {
		if r, ok := kb.XidSubcodeRemedy(e.Code, e.Subcode, e.ErrorStatus, e.Severity == "Fatal"); ok {
			return r, true
		}
	}
	return kb.Remedy(string(e.Kind), strconv.FormatUint(e.Code, 10))
}

// unknownWords says why gpuform cannot judge an event: "unknown to this
// release of gpuform" or "NVIDIA's catalogue gives no action".
func unknownWords(kb *kb.KB, rem kb.Remedy, ok bool) string {
	if ok {
		return rem.Describe() + ": NVIDIA's catalogue gives no action"
	}
	if d, ok := kb.RefreshDate(); ok {
		return "unknown to this release of gpuform (its catalogue was last checked " + d.String() + ")"
	}
	return "unknown to this release of gpuform"
}

// checkKernelXID judges the Xid and SXid lines of the kernel log since
// boot by the remediation catalogue. An unreadable log is an error that
// says why (dmesg refused to an unprivileged user is common): nothing was
// judged, so nothing passed. An Xid the catalogue does not know, or one
// NVIDIA gives no action for, is never a pass either.
func checkKernelXID(exp Expectation, lg *kmsg.Log) []CheckResult {
	if lg == nil {
		return nil
	}
	r := CheckResult{ID: string(CheckKernelXID), Expected: "no Xid or SXid that takes the node out"}
	if lg.Unreadable != "" {
		r.Status, r.Message = StatusError, "the kernel log could not be read, so no Xid was judged: "+lg.Unreadable
		r.Remedy = unreadableLogRemedy()
		return []CheckResult{r}
	}
	fatal := exp.FatalXIDs
	if fatal == nil {
		fatal = DefaultFatalXIDs()
	}
	kbase := exp.KB
	type key struct {
		kind                       kmsg.Kind
		code                       uint64
		pci, sub, status, severity string
	}
	var order []key
	first := map[key]kmsg.Event{}
	count := map[key]int{}
	for _, e := range lg.Events {
		k := key{e.Kind, e.Code, e.PCI, e.Subcode, e.ErrorStatus, e.Severity}
		if count[k] == 0 {
			order = append(order, k)
			first[k] = e
		}
		count[k]++
	}
	var seen, bad, monitor, unknown []string
	var worst *kb.Remedy
	for _, k := range order {
		name := "Xid"
		if k.kind == kmsg.KindSXid {
			name = "SXid"
		}
		s := fmt.Sprintf("%s %d at PCI:%s", name, k.code, k.pci)
		if k.sub != "" {
			s = fmt.Sprintf("%s %d %s at PCI:%s", name, k.code, k.sub, k.pci)
		}
		if count[k] > 1 {
			s += fmt.Sprintf(" (%d times)", count[k])
		}
		seen = append(seen, s)
		rem, ok := xidRemedy(kbase, first[k])
		isFatal := k.kind == kmsg.KindXid && slices.Contains(fatal, k.code)
		switch {
		case ok && (takesOut(rem.Action) || isFatal):
			bad = append(bad, s+" — "+rem.Describe())
			if worst == nil || Worse(rem.Action, worst.Action) {
				worst = &rem
			}
		case !ok && isFatal:
			bad = append(bad, s+" (not in the catalogue)")
		case !ok || rem.Action == kb.ActionUnknown:
			unknown = append(unknown, s+" — "+unknownWords(kbase, rem, ok))
		case ok && rem.Action == kb.ActionMonitor:
			monitor = append(monitor, s+" — "+rem.Describe())
		}
	}
	r.Status, r.Observed = StatusPass, "none since boot"
	if !lg.Since.IsZero() {
		r.Observed = "none since " + lg.Since.UTC().Format(time.RFC3339)
	}
	if len(seen) > 0 {
		r.Observed = strings.Join(seen, ", ")
	}
	switch {
	case len(bad) > 0:
		r.Status = StatusFail
		r.Message = strings.Join(bad, "; ")
		if worst != nil {
			r.Remedy = remedyOf(*worst)
			r.Message += ": " + worst.Action.Words()
		}
		if len(unknown) > 0 {
			r.Message += "; not judged: " + strings.Join(unknown, "; ")
		}
	case len(unknown) > 0:
		r.Status = StatusError
		if exp.UnknownXidFail {
			r.Status = StatusFail
		}
		r.Message = "not judged: " + strings.Join(unknown, "; ")
		r.Remedy = unknownXidRemedy(exp.UnknownXidFail)
	case len(monitor) > 0:
		r.Message = "monitor-class: " + strings.Join(monitor, "; ") + " (NVIDIA: restart the application; repeats point to the GPU)"
	}
	return []CheckResult{r}
}
