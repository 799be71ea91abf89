package verify

import (
	"fmt"
	"strconv"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

func checkECCErrors(_ Expectation, g *nvmlfacts.GPU) *CheckResult {
	r := &CheckResult{ID: CheckECCUncorrectable.GPU(g.Index), Expected: "0 volatile, 0 aggregate"}
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
	r := &CheckResult{ID: CheckRowRemap.GPU(g.Index), Expected: "no pending remap, no remap failure"}
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
