package lint

import (
	"fmt"
	"time"
)

// knowledgeBaseStaleAfter is how long after its refresh date lint says the
// knowledge base may be out of date: NVIDIA ships a driver release, a
// CUDA update, an NCCL release or an NGC image every few weeks, so a
// quarter after the tables were last checked some are surely missing.
const knowledgeBaseStaleAfter = 90 * 24 * time.Hour

// knowledgeBaseAgeRule declares knowledge_base_age.
func knowledgeBaseAgeRule() Rule {
	return Rule{
		Name:     "knowledge_base_age",
		Severity: Info,
		Summary:  "The embedded knowledge base was last checked against its sources more than 90 days ago: newer releases may be unknown to it.",
		Check:    checkKnowledgeBaseAge,
	}
}

func checkKnowledgeBaseAge(ctx *Context) {
	r, ok := ctx.kb().RefreshDate()
	if !ok || ctx.Now.Sub(r.Date) <= knowledgeBaseStaleAfter {
		return
	}
	nodes := ctx.Nodes()
	if len(nodes) == 0 {
		return
	}
	newest := "none dated"
	if d, ok := ctx.kb().NewestFact(); ok {
		newest = d.String() + ", " + d.What
	}
	// One finding per run, on the first node: the age is the binary's, not
	// any node's.
	days := int(ctx.Now.Sub(r.Date).Hours() / 24)
	ctx.ReportAs(Info, nodes[0].DeclRange,
		fmt.Sprintf("gpuform's knowledge base was refreshed %d days ago (%s)", days, r),
		fmt.Sprintf("Its tables were last checked against their sources on %s; the newest release they know is %s. Drivers, CUDA, NCCL, toolkit releases, images and security bulletins published since are unknown to this build: lint reports them as \"not in the knowledge base\" and cannot check them. Upgrade gpuform for newer data (`gpuform version` prints both dates; docs/knowledge-base.md says how the tables are refreshed).", r, newest))
}
