package lint

import (
	"fmt"
	"time"
)

// knowledgeBaseStaleAfter is how old the newest fact may be before lint
// says so: NVIDIA ships a driver branch, CUDA minor or NGC release every
// few months, so after half a year some are surely missing.
const knowledgeBaseStaleAfter = 180 * 24 * time.Hour

// knowledgeBaseAgeRule declares knowledge_base_age.
func knowledgeBaseAgeRule() Rule {
	return Rule{
		Name:     "knowledge_base_age",
		Severity: Info,
		Summary:  "The embedded knowledge base is more than 180 days old: newer releases may be unknown to it.",
		Check:    checkKnowledgeBaseAge,
	}
}

func checkKnowledgeBaseAge(ctx *Context) {
	d, ok := ctx.kb().NewestFact()
	if !ok || ctx.Now.Sub(d.Date) <= knowledgeBaseStaleAfter {
		return
	}
	nodes := ctx.Nodes()
	if len(nodes) == 0 {
		return
	}
	// One finding per run, on the first node: the age is the binary's, not
	// any node's.
	days := int(ctx.Now.Sub(d.Date).Hours() / 24)
	ctx.ReportAs(Info, nodes[0].DeclRange,
		fmt.Sprintf("gpuform's knowledge base is %d days old (newest fact %s)", days, d),
		fmt.Sprintf("The newest fact gpuform knows is %s. Drivers, CUDA, NCCL, toolkit releases and advisories published since then are unknown to this build: lint reports them as \"not in the knowledge base\" and cannot check them. Upgrade gpuform for newer data (`gpuform version` prints the date; docs/knowledge-base.md says how the tables are refreshed).", d.What))
}
