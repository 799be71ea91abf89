package verify

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpuform/gpuform/kb"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// DefaultFatalXIDs are the XIDs Azure's GPU health checks fail a node on
// (customTests/azure_gpu_xid.nhc in
// https://github.com/Azure/azurehpc-health-checks at commit
// 0e0a1ac26a64b32ac4dd7632a529638505d3314a:
// https://github.com/Azure/azurehpc-health-checks/blob/0e0a1ac26a64b32ac4dd7632a529638505d3314a/customTests/azure_gpu_xid.nhc).
func DefaultFatalXIDs() []uint64 {
	return []uint64{48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 119, 120}
}

func checkXID(exp Expectation, rep *nvmlfacts.Report) []CheckResult {
	if rep.XID == nil {
		return nil
	}
	fatal := exp.FatalXIDs
	if fatal == nil {
		fatal = DefaultFatalXIDs()
	}
	r := CheckResult{ID: string(CheckXID), Status: StatusPass, Expected: "no fatal XID in " + (time.Duration(rep.XID.WindowMS) * time.Millisecond).String()}
	var seen, bad, unknown []string
	var badCodes []uint64
	kbase := exp.KB
	for _, e := range rep.XID.Events {
		s := fmt.Sprintf("XID %d on gpu%d", e.XID, e.GPU)
		seen = append(seen, s)
		rem, known := kbase.XidRemedy(e.XID)
		if !slices.Contains(fatal, e.XID) && (!known || rem.Action == kb.ActionUnknown) {
			// Never a pass: gpuform cannot judge it (kernel.xid says the same).
			unknown = append(unknown, s+" — "+unknownWords(kbase, rem, known))
		}
		if slices.Contains(fatal, e.XID) {
			if rem, ok := kbase.XidRemedy(e.XID); ok {
				s += " (" + rem.Describe() + ")"
			}
			bad = append(bad, s)
			badCodes = append(badCodes, e.XID)
		}
	}
	r.Observed = "none"
	if len(seen) > 0 {
		r.Observed = strings.Join(seen, ", ")
	}
	if len(bad) > 0 {
		r.Status = StatusFail
		r.Message = "fatal XID seen: " + strings.Join(bad, ", ")
		if w := worstRemedy(kbase, "xid", badCodes); w != nil {
			r.Remedy = remedyOf(*w)
			r.Message += ": " + w.Action.Words()
		} else {
			r.Message += " (drain the node; the Xid is not in gpuform's catalogue)"
		}
	} else if len(unknown) > 0 {
		r.Status = StatusError
		if exp.UnknownXidFail {
			r.Status = StatusFail
		}
		r.Message = "not judged: " + strings.Join(unknown, "; ")
		r.Remedy = unknownXidRemedy(exp.UnknownXidFail)
	}
	return []CheckResult{r}
}
