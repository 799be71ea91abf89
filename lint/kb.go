package lint

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/spec"
)

// This file is the bridge between rules and the knowledge base: it turns
// spec values into compat queries and compat facts into severities and
// citations, so that every rule applies the status rule the same way
// (issue 3: errors only on confirmed or derived facts).

// severityFor caps a finding's severity by the status of the fact it rests
// on: confirmed and derived facts may carry the rule's full severity;
// secondary and unconfirmed facts give at most a warning.
func severityFor(f kb.Fact, max Severity) Severity {
	if f.Status.CanBeError() {
		return max
	}
	return min(max, Warning)
}

// cite names the public source of a fact, and for facts that cannot carry
// an error says so, so a reader sees why a finding is only a warning.
func cite(f kb.Fact) string {
	src := preferredSource(f)
	if src == "" {
		src = "gpuform knowledge base " + f.Where()
	}
	if f.Status.CanBeError() {
		return src
	}
	return fmt.Sprintf("%s; this fact is %s in gpuform's knowledge base (%s), so the finding is a warning", src, f.Status, f.Where())
}

// preferredSource picks the source to cite in one line: NVIDIA's own
// documentation when the row has it (rows often list a third-party page
// first for one column and NVIDIA's page for another), else the first.
func preferredSource(f kb.Fact) string {
	for _, s := range f.Sources {
		if strings.Contains(s, "docs.nvidia.com") && !strings.HasPrefix(s, "not read") {
			return s
		}
	}
	return f.Source()
}

// caveat is a sentence for details of findings on weak facts; empty for
// confirmed and derived facts.
func caveat(f kb.Fact) string {
	if f.Status.CanBeError() {
		return ""
	}
	return fmt.Sprintf("This rests on %s data in gpuform's knowledge base (%s, %s), so it is a warning, not an error.", f.Status, f.Where(), orNone(preferredSource(f)))
}

func orNone(s string) string {
	if s == "" {
		return "no public source recorded"
	}
	return s
}

// kb returns the knowledge base a run uses.
func (c *Context) kb() *kb.KB { return c.KB }

// driverVersion converts a spec driver version to the compat form.
func driverVersion(v spec.Version) (kb.Version, bool) {
	if v.IsZero() || len(v.Parts) == 0 {
		return kb.Version{}, false
	}
	cv, err := kb.ParseDriverVersion(joinParts(v.Raw, v.Parts))
	return cv, err == nil
}

// releaseVersion converts a CUDA, NCCL, DCGM or toolkit version; a package
// revision suffix ("2.21.5-1") is dropped.
func releaseVersion(v spec.Version) (kb.Version, bool) {
	if v.IsZero() || len(v.Parts) == 0 {
		return kb.Version{}, false
	}
	cv, err := kb.ParseVersion(joinParts(v.Raw, v.Parts))
	return cv, err == nil
}

// joinParts rebuilds the dotted part of a version as written (keeping
// "08" in driver versions) without its "-revision" suffix.
func joinParts(raw string, parts []int) string {
	if i := strings.IndexByte(raw, '-'); i >= 0 {
		return raw[:i]
	}
	if raw != "" {
		return raw
	}
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ".")
}

// nodeDriver returns a node's driver version when written.
func nodeDriver(n *spec.Node) (kb.Version, bool) {
	if n.Driver == nil || !n.Driver.Version.Set {
		return kb.Version{}, false
	}
	return driverVersion(n.Driver.Version.V)
}

// nodeComponent returns a component's version when written.
func nodeComponent(c *spec.VersionedBlock) (kb.Version, bool) {
	if c == nil || !c.Version.Set {
		return kb.Version{}, false
	}
	return releaseVersion(c.Version.V)
}

// hostFact looks up a facts.tsv row; rules skip their check when a fact is
// missing rather than invent a number.
func (c *Context) hostFact(id string) (kb.HostFact, bool) {
	return c.kb().HostFact(id)
}

var (
	shmSizeFlag = lazyre.New(`--shm-size=([0-9]+[a-zA-Z]*)`)
	stackFlag   = lazyre.New(`stack=([0-9]+)`)
	ncclSeries  = lazyre.New(`NCCL ([0-9]+\.[0-9]+)\+`)
)

// kbShmFloor is the /dev/shm size NVIDIA's NCCL guide runs containers with
// (facts.tsv nccl-docker-shm: "--shm-size=1g").
func (c *Context) kbShmFloor() (uint64, kb.Fact, bool) {
	f, ok := c.hostFact("nccl-docker-shm")
	if !ok {
		return 0, kb.Fact{}, false
	}
	m := shmSizeFlag.FindStringSubmatch(f.Value)
	if m == nil {
		return 0, kb.Fact{}, false
	}
	s, err := spec.ParseSize(m[1])
	if err != nil || s.Bytes == 0 {
		return 0, kb.Fact{}, false
	}
	return s.Bytes, f.Fact, true
}

// kbDockerShmDefault is Docker's default /dev/shm (facts.tsv
// docker-shm-default: "64m (67108864 bytes)").
func (c *Context) kbDockerShmDefault() (uint64, kb.Fact, bool) {
	f, ok := c.hostFact("docker-shm-default")
	if !ok {
		return 0, kb.Fact{}, false
	}
	fields := strings.Fields(f.Value)
	if len(fields) == 0 {
		return 0, kb.Fact{}, false
	}
	s, err := spec.ParseSize(fields[0])
	if err != nil || s.Bytes == 0 {
		return 0, kb.Fact{}, false
	}
	return s.Bytes, f.Fact, true
}

// kbNGCStack is the stack ulimit NGC images recommend at start-up
// (facts.tsv ngc-banner-flags: "--ulimit stack=67108864").
func (c *Context) kbNGCStack() (uint64, kb.Fact, bool) {
	f, ok := c.hostFact("ngc-banner-flags")
	if !ok {
		return 0, kb.Fact{}, false
	}
	m := stackFlag.FindStringSubmatch(f.Value)
	if m == nil {
		return 0, kb.Fact{}, false
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil || n == 0 {
		return 0, kb.Fact{}, false
	}
	return n, f.Fact, true
}

// kbNCCLStackFix returns the NCCL series from which NCCL sizes its own
// thread stacks, so an unlimited stack ulimit is harmless (facts.tsv
// nccl-stack-unlimited: "NCCL 2.28+ resets its own thread stack size").
func (c *Context) kbNCCLStackFix() (kb.Version, kb.Fact, bool) {
	f, ok := c.hostFact("nccl-stack-unlimited")
	if !ok {
		return kb.Version{}, kb.Fact{}, false
	}
	m := ncclSeries.FindStringSubmatch(f.Statement)
	if m == nil {
		return kb.Version{}, f.Fact, true
	}
	v, err := kb.ParseVersion(m[1])
	if err != nil {
		return kb.Version{}, f.Fact, true
	}
	return v, f.Fact, true
}

// notInKB reports a version the knowledge base does not know: never an
// error, because a release newer than the tables is usually fine.
func notInKB(ctx *Context, a spec.Attr[spec.Version], n *spec.Node, what, newest string) {
	detail := fmt.Sprintf("gpuform's knowledge base has no row for %s %s, so it cannot check its requirements. ", what, a.V.Raw)
	if newest != "" {
		detail += fmt.Sprintf("The newest %s it knows is %s. ", what, newest)
	}
	detail += "If the version is right, suppress this with # gpuform-ignore: " + ctx.rule.Name + " -- <reason>, and consider adding the release to kb/data with its NVIDIA source."
	ctx.ReportAs(Warning, a.Range,
		fmt.Sprintf("%s: %s %s is not in the knowledge base", nodeRef(n), what, a.V.Raw), detail)
}

func orDash(v kb.Version) string {
	if v.IsZero() {
		return "(not in the table)"
	}
	return v.String()
}

// gpuModel looks the hardware's GPU model up in the knowledge base.
func gpuModel(ctx *Context, n *spec.Node) (kb.GPUModel, bool) {
	if n.Hardware == nil || n.Hardware.GPUModel == "" {
		return kb.GPUModel{}, false
	}
	return ctx.kb().GPU(n.Hardware.GPUModel)
}

// effectiveFlavour is the kernel-module flavour a driver installs: the
// written one, or the branch default (open from R560, facts.tsv
// open-modules-default).
func effectiveFlavour(ctx *Context, d *spec.Driver, drv kb.Version) (spec.KernelFlavour, bool) {
	if d.KernelModule.Set {
		return d.KernelModule.V, true
	}
	f, ok := ctx.hostFact("open-modules-default")
	if !ok {
		return "", false
	}
	// The value reads "R515 / R560": open exists from the first, default
	// from the second.
	parts := strings.Split(f.Value, "/")
	def, err := kb.ParseDriverVersion(strings.TrimSpace(parts[len(parts)-1]))
	if err != nil {
		return "", false
	}
	if drv.Branch() >= def.Branch() {
		return spec.KernelOpen, true
	}
	return spec.KernelProprietary, true
}
