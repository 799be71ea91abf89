package lint

import (
	"fmt"

	"github.com/gpuform/gpuform/kb"
)

// dcgmDriverRule declares dcgm_driver.
func dcgmDriverRule() Rule {
	return Rule{
		Name:     "dcgm_driver",
		Severity: Error,
		Summary:  "The DCGM major version needs a newer driver than the one pinned.",
		Check:    checkDCGMDriver,
	}
}

func checkDCGMDriver(ctx *Context) {
	for _, n := range ctx.Nodes() {
		dcgm, okG := nodeComponent(n.DCGM)
		if !okG {
			continue
		}
		flavor := ""
		if cuda, ok := nodeComponent(n.CUDA); ok {
			flavor = fmt.Sprintf("cuda%d", cuda.Major())
		}
		nvswitch := n.Hardware != nil && n.Hardware.Interconnect == "nvswitch"
		min, ok := ctx.kb().DCGMMinDriver(dcgm, flavor, nvswitch)
		if !ok {
			notInKB(ctx, n.DCGM.Version, n, "DCGM", "")
			continue
		}
		drv, okD := nodeDriver(n)
		if !okD || min.Check(drv) != kb.No {
			continue
		}
		ctx.ReportAs(severityFor(min.Fact, Error), n.DCGM.Version.Range,
			fmt.Sprintf("%s: DCGM %d needs driver %s or later; driver %s is older", nodeRef(n), dcgm.Major(), min.Driver, drv),
			fmt.Sprintf("DCGM's host engine does not start (or its diagnostics fail) on an older driver (%s). Upgrade the driver or use an older DCGM major. %s", cite(min.Fact), caveat(min.Fact)))
	}
}
