package lint

import (
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/diagview"
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/spec"
)

// DocsPath is where every rule's documentation lives, relative to the
// repository root; a rule's Link is DocsPath + "#" + its name.
const DocsPath = "docs/rules.md"

// Rule is one check over an evaluated spec. Rules are plain values so that
// the catalogue can be listed, documented and configured without running them.
type Rule struct {
	// Name is the rule's snake_case identifier, used in suppressions,
	// configuration and every output format.
	Name string
	// Severity is the severity of a finding that rests on confirmed facts.
	Severity Severity
	// Summary is a one-line statement of what the rule checks.
	Summary string
	// Link points at the rule's documentation section.
	Link string
	// Check inspects ctx.Config and reports findings through ctx. It must
	// tolerate partial configs: any block may be nil, any Attr unset.
	Check func(ctx *Context)
}

// Context is what a rule's Check sees: the config, the lint-time inputs and
// a way to report findings. A Context is used by one rule at a time.
type Context struct {
	// Config is the spec being linted; never nil inside a Check.
	Config *spec.Config
	// Now is the moment end-of-life dates are compared against.
	Now time.Time
	// KB is the compatibility knowledge base every version fact comes from.
	KB *kb.KB

	pins     Pins
	rule     *Rule
	findings []Finding
}

// Report records a finding at the rule's own severity.
func (c *Context) Report(rng hcl.Range, summary, detail string) {
	c.ReportAs(c.rule.Severity, rng, summary, detail)
}

// ReportAs records a finding at a severity lower than the rule's, for
// findings that rest on secondary or unconfirmed data. A severity above the
// rule's is lowered to it, so a rule can never out-shout its declaration.
func (c *Context) ReportAs(sev Severity, rng hcl.Range, summary, detail string) {
	if sev > c.rule.Severity || sev == 0 {
		sev = c.rule.Severity
	}
	c.findings = append(c.findings, Finding{
		Rule:     c.rule.Name,
		Severity: sev,
		Summary:  summary,
		Detail:   strings.TrimSpace(detail),
		Link:     c.rule.Link,
		Range:    rng,
	})
}

// Nodes returns the config's non-nil node blocks.
func (c *Context) Nodes() []*spec.Node {
	out := make([]*spec.Node, 0, len(c.Config.Nodes))
	for _, n := range c.Config.Nodes {
		if n != nil {
			out = append(out, n)
		}
	}
	return out
}

// Pinned returns the exact version the lock file records for a node's
// component.
func (c *Context) Pinned(node string, component spec.Component) (string, bool) {
	v, ok := c.pins[PinKey{Node: node, Component: component}]
	return v, ok && v != ""
}

// PinKey names one component of one node in a lock file.
type PinKey struct {
	// Node is the node block's label.
	Node string
	// Component is the versioned component.
	Component spec.Component
}

// Pins are the exact releases a lock file records, by node and component.
type Pins map[PinKey]string

// Catalogue is the rule catalogue as the output formats describe it
// (SARIF's tool.driver.rules), in Rules' order.
func Catalogue() []diagview.Rule {
	rules := Rules()
	out := make([]diagview.Rule, len(rules))
	for i, r := range rules {
		out[i] = diagview.Rule{Name: r.Name, Severity: r.Severity, Summary: r.Summary, Link: r.Link}
	}
	return out
}

// Rules returns the whole rule catalogue, sorted by name: one line per
// rule, each declared in the rule_<name>.go file named after it (or after
// its family). Each call builds fresh values, so callers may not affect one
// another.
func Rules() []Rule {
	rs := []Rule{
		lintUnknownRule(),
		affinityUnknownDeviceRule(),
		apptainerMountDevRule(),
		apptainerNvccliSetuidRule(),
		apptainerNvidiaContainerCLIRule(),
		bindingUnboundGPUsRule(),
		containerImageDriverRule(),
		containerMemlockRule(),
		containerNvidiaRuntimeRule(),
		containerShmSizeRule(),
		containerStackUlimitRule(),
		containerToolkitVersionRule(),
		cudaDriverMinimumRule(),
		dcgmDriverRule(),
		driverBranchEOLRule(),
		driverSecurityAdvisoryRule(),
		duplicateHostRule(),
		enrootNvidiaContainerCLIRule(),
		fabricManagerRequiredRule(),
		fabricManagerVersionRule(),
		nvlinkDomainReleasesRule(),
		nvlinkDomainSizeRule(),
		gpuDriverMinimumRule(),
		gpuKernelModuleRule(),
		gpuNICDistanceRule(),
		gpuNICCrossSocketRule(),
		gpuNICSharedRule(),
		gpuDirectWithoutPeermemRule(),
		hostShmSizeRule(),
		hugepagesExceedRAMRule(),
		inventoryUserConflictRule(),
		iommuPassthroughRule(),
		knowledgeBaseAgeRule(),
		ncclCUDABuildRule(),
		ncclEnvNICsRule(),
		ncclFloorLowRule(),
		ncclFloorPhysicalRule(),
		ncclMultiNodePerHostRule(),
		ncclMultiNodeHostsRule(),
		numaBalancingRule(),
		numaBindDuplicateRule(),
		numaBindIncompleteRule(),
		numaBindUnknownRule(),
		numaBindWrongNodeRule(),
		peermemWithoutRDMARule(),
		persistenceModeRule(),
		pyxisEnrootVersionRule(),
		verifyGPUCountRule(),
		verifyNVLinkRule(),
		versionNotPinnedRule(),
		hostBalanceRule(),
		workloadLayoutRule(),
		workloadMemoryRule(),
	}
	for i := range rs {
		rs[i].Link = DocsPath + "#" + rs[i].Name
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
	return rs
}

// renamedRules maps rule names that are gone to the rule that now does
// their job, so configurations and suppressions that name them keep working
// (with a finding asking to rename them).
func renamedRules() map[string]string {
	return map[string]string{"tensor_parallel_domain": "workload_layout"}
}
