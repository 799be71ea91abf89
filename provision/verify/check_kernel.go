package verify

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/lint/compat"
	"github.com/gpuform/gpuform/provision/verify/kmsg"
)

// takesOut reports whether an action needs the node out of service now.
func takesOut(a compat.Action) bool {
	switch a {
	case compat.ActionResetGPU, compat.ActionReboot, compat.ActionInspect, compat.ActionRMA:
		return true
	}
	return false
}

// checkKernelXID judges the Xid and SXid lines of the kernel log since
// boot by the remediation catalogue. An unreadable log is a skip that says
// why (dmesg refused to an unprivileged user is common), not a guess.
func checkKernelXID(exp Expectation, lg *kmsg.Log) []CheckResult {
	if lg == nil {
		return nil
	}
	r := CheckResult{ID: string(CheckKernelXID), Expected: "no Xid or SXid that takes the node out"}
	if lg.Unreadable != "" {
		r.Status, r.Message = StatusSkip, "the kernel log could not be read: "+lg.Unreadable
		return []CheckResult{r}
	}
	fatal := exp.FatalXIDs
	if fatal == nil {
		fatal = DefaultFatalXIDs()
	}
	kb := compat.Default()
	type key struct {
		kind kmsg.Kind
		code uint64
		pci  string
	}
	var order []key
	count := map[key]int{}
	for _, e := range lg.Events {
		k := key{e.Kind, e.Code, e.PCI}
		if count[k] == 0 {
			order = append(order, k)
		}
		count[k]++
	}
	var seen, bad, monitor []string
	var worst *compat.Remedy
	for _, k := range order {
		name := "Xid"
		if k.kind == kmsg.KindSXid {
			name = "SXid"
		}
		s := fmt.Sprintf("%s %d at PCI:%s", name, k.code, k.pci)
		if count[k] > 1 {
			s += fmt.Sprintf(" (%d times)", count[k])
		}
		seen = append(seen, s)
		rem, ok := kb.Remedy(string(k.kind), strconv.FormatUint(k.code, 10))
		isFatal := k.kind == kmsg.KindXid && slices.Contains(fatal, k.code)
		switch {
		case ok && (takesOut(rem.Action) || isFatal):
			bad = append(bad, s+" — "+rem.Describe())
			if worst == nil || Worse(rem.Action, worst.Action) {
				worst = &rem
			}
		case !ok && isFatal:
			bad = append(bad, s+" (not in the catalogue)")
		case ok && rem.Action == compat.ActionMonitor:
			monitor = append(monitor, s+" — "+rem.Describe())
		}
	}
	r.Status, r.Observed = StatusPass, "none since boot"
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
	case len(monitor) > 0:
		r.Message = "monitor-class: " + strings.Join(monitor, "; ") + " (NVIDIA: restart the application; repeats point to the GPU)"
	}
	return []CheckResult{r}
}
