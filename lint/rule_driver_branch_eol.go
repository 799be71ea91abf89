package lint

import (
	"fmt"
	"time"

	"github.com/gpuform/gpuform/kb"
)

// driverBranchEOLRule declares driver_branch_eol.
func driverBranchEOLRule() Rule {
	return Rule{
		Name:     "driver_branch_eol",
		Severity: Error,
		Summary:  "The driver branch is past its end of life.",
		Check:    checkDriverEOL,
	}
}

// eolSoon is how early driver_branch_eol mentions an approaching end of life.
const eolSoon = 180 * 24 * time.Hour

func checkDriverEOL(ctx *Context) {
	branches := ctx.kb().Branches()
	newest := 0
	if len(branches) > 0 {
		newest = branches[len(branches)-1].Number
	}
	for _, n := range ctx.Nodes() {
		drv, ok := nodeDriver(n)
		if !ok {
			continue
		}
		a := n.Driver.Version
		b, ok := ctx.kb().DriverBranch(drv)
		if !ok {
			ctx.ReportAs(Warning, a.Range,
				fmt.Sprintf("%s: driver branch R%d is not in the knowledge base", nodeRef(n), drv.Branch()),
				fmt.Sprintf("gpuform's knowledge base has no lifecycle row for R%d (the newest branch it knows is R%d), so its end of life is not checked. Check NVIDIA's \"Supported Drivers and CUDA Toolkit Versions\" page (https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html) and suppress with a reason, or add the branch to kb/data/driver-branches.tsv.", drv.Branch(), newest))
			continue
		}
		eol, f := b.IsEOL(ctx.Now)
		switch eol {
		case kb.Yes:
			when := "NVIDIA lists it as end of life"
			if !b.EOL.Date.IsZero() {
				when = "its end of life was " + b.EOL.Text
			}
			ctx.ReportAs(severityFor(f, Error), a.Range,
				fmt.Sprintf("%s: driver branch R%d is past its end of life", nodeRef(n), b.Number),
				fmt.Sprintf("R%d (%s) no longer receives security or bug fixes: %s (%s). Move to a supported production or long term support branch. %s", b.Number, b.Type, when, cite(f), caveat(f)))
		case kb.No:
			if !b.EOL.Date.IsZero() && b.EOL.Date.Sub(ctx.Now) < eolSoon {
				ctx.ReportAs(Info, a.Range,
					fmt.Sprintf("%s: driver branch R%d reaches end of life in %s", nodeRef(n), b.Number, b.EOL.Text),
					fmt.Sprintf("Plan the move to a newer branch before support ends (%s).", cite(f)))
			}
		}
		if b.Type == kb.EvaluationBranch {
			ctx.ReportAs(Warning, a.Range,
				fmt.Sprintf("%s: driver branch R%d is an evaluation/developer branch", nodeRef(n), b.Number),
				fmt.Sprintf("Evaluation branches have no support lifecycle and are not meant for production nodes (%s).", cite(b.TypeFact)))
		}
	}
}
