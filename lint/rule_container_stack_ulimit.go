package lint

import (
	"fmt"
)

// containerStackUlimitRule declares container_stack_ulimit.
func containerStackUlimitRule() Rule {
	return Rule{
		Name:     "container_stack_ulimit",
		Severity: Warning,
		Summary:  "The stack ulimit of containers is below NVIDIA's NGC recommendation, or unlimited.",
		Check:    checkContainerStack,
	}
}

func checkContainerStack(ctx *Context) {
	want, fact, ok := ctx.kbNGCStack()
	if !ok {
		return
	}
	fixedIn, unlimitedFact, unlimitedOK := ctx.kbNCCLStackFix()
	for _, n := range ctx.Nodes() {
		c := n.Container
		if c == nil {
			continue
		}
		st, ok := c.Ulimits["stack"]
		if !ok {
			continue
		}
		switch {
		case st.V.Unlimited:
			if !unlimitedOK {
				continue
			}
			if v, ok := nodeComponent(n.NCCL); ok && !fixedIn.IsZero() && v.Truncate(2).Compare(fixedIn) >= 0 {
				continue
			}
			ctx.ReportAs(severityFor(unlimitedFact, Warning), st.Range,
				fmt.Sprintf("%s: stack ulimit is unlimited", nodeRef(n)),
				fmt.Sprintf("With an unlimited stack glibc gives new threads only 2 MB, and NCCL has crashed in that setting (%s); NCCL 2.28 and later size their own thread stacks. Use stack = \"%s\" as NGC images recommend.", cite(unlimitedFact), humanBytes(want)))
		case !st.V.IsPercent() && st.V.Bytes < want:
			ctx.ReportAs(severityFor(fact, Warning), st.Range,
				fmt.Sprintf("%s: stack ulimit %s is below the %s NGC images ask for", nodeRef(n), st.V, humanBytes(want)),
				fmt.Sprintf("NVIDIA's NGC framework images print a warning at start-up and recommend --ulimit stack=%d (%s). Set ulimits = { stack = \"%s\" }.", want, cite(fact), humanBytes(want)))
		}
	}
}
