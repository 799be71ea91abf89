package lint

import (
	"fmt"

	"github.com/gpuform/gpuform/kb"
)

// containerToolkitVersionRule declares container_toolkit_version.
func containerToolkitVersionRule() Rule {
	return Rule{
		Name:     "container_toolkit_version",
		Severity: Error,
		Summary:  "The NVIDIA Container Toolkit release is vulnerable, unknown, or too old for the driver or for CDI.",
		Check:    checkToolkitVersion,
	}
}

func checkToolkitVersion(ctx *Context) {
	rels := ctx.kb().ContainerToolkitReleases()
	newest := ""
	if len(rels) > 0 {
		newest = rels[len(rels)-1].Version.String()
	}
	for _, n := range ctx.Nodes() {
		if n.Container == nil || !n.Container.NvidiaContainerToolkit.Set {
			continue
		}
		a := n.Container.NvidiaContainerToolkit
		v, ok := releaseVersion(a.V)
		if !ok {
			continue
		}
		if _, known := ctx.kb().ContainerToolkit(v); !known && v.IsExact() {
			notInKB(ctx, a, n, "NVIDIA Container Toolkit", newest)
		}
		for _, adv := range toolkitAdvisories() {
			if v.Compare(adv.fixed) < 0 && (v.IsExact() || !adv.fixed.Within(v)) {
				ctx.ReportAs(severityFor(adv.fact, Error), a.Range,
					fmt.Sprintf("%s: NVIDIA Container Toolkit %s is affected by %s", nodeRef(n), a.V.Raw, adv.id),
					fmt.Sprintf("%s affects releases before %s (%s): %s Upgrade to %s or later. %s", adv.id, adv.fixed, cite(adv.fact), adv.note, adv.fixed, caveat(adv.fact)))
			}
		}
		if drv, ok := nodeDriver(n); ok {
			if min, ok := ctx.kb().ToolkitMinDriver(); ok && min.Check(drv) == kb.No {
				ctx.ReportAs(severityFor(min.Fact, Error), a.Range,
					fmt.Sprintf("%s: the NVIDIA Container Toolkit needs driver %s or later; driver %s is older", nodeRef(n), min.Driver, drv),
					fmt.Sprintf("%s %s", cite(min.Fact), caveat(min.Fact)))
			}
		}
		if _, okD := nodeDriver(n); okD {
			if t, f := ctx.kb().ToolkitSupports(v, "cdi-auto-refresh"); t == kb.No {
				feat, _ := ctx.kb().ToolkitFeature("cdi-auto-refresh")
				ctx.ReportAs(Info, a.Range,
					fmt.Sprintf("%s: NVIDIA Container Toolkit %s does not refresh CDI specs after a driver change", nodeRef(n), a.V.Raw),
					fmt.Sprintf("CDI specifications name the driver's files by version; after a driver upgrade a stale spec makes containers fail to start until `nvidia-ctk cdi generate` runs again. From toolkit %s the %s does this on its own (%s). Upgrade the toolkit, or regenerate CDI specs after every driver change.", feat.MinToolkit, feat.Value, cite(f)))
			}
		}
	}
}
