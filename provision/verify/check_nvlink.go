package verify

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

func checkNVLink(exp Expectation, g *nvmlfacts.GPU) *CheckResult {
	if exp.NVLink == NVLinkUnchecked {
		return nil
	}
	r := &CheckResult{ID: CheckNVLink.GPU(g.Index)}
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
