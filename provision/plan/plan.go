package plan

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/preflight"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/spec"
)

// Plan is the planned changes for every targeted host. It is the model
// the text plan, the JSON document (json.go) and apply read; its JSON shape
// is planJSON's.
type Plan struct {
	// Applyable is true when at least one host has changes and no host
	// failed to plan.
	Applyable bool
	// Errored is true when some host could not be probed or planned.
	Errored bool
	// Hosts are the per-host plans in spec order.
	Hosts []*HostPlan
	// Nodes are the node blocks the hosts belong to, with their rollout.
	Nodes []NodeRollout
	// Summary totals the hosts' summaries.
	Summary Summary
}

// NodeRollout is how apply walks the hosts of one node block.
type NodeRollout struct {
	// Name is the node block's label.
	Name string
	// Hosts are the node's targeted hosts in spec order.
	Hosts []string
	// Batch is how many hosts are changed at once; 0 means all at once.
	Batch int
	// MaxFailures is the failure budget; -1 means none is set (carry on).
	MaxFailures int
	// Reboot is spec.RebootAllow when apply may reboot a host that needs
	// it; spec.RebootNever otherwise.
	Reboot spec.RebootPolicy
	// Drain is spec.DrainSlurm when apply drains each host in Slurm before
	// changing it and resumes it once it has converged; "" otherwise.
	Drain spec.DrainMode
	// StepTimeout is the node's rollout { step_timeout }, as written
	// ("45m", which the plan JSON carries) and parsed; unset (zero)
	// leaves the limit to apply.
	StepTimeout spec.Duration
	// DrainTimeout and DrainPoll are rollout { drain_timeout, drain_poll },
	// as written and parsed; unset leaves them to apply.
	DrainTimeout spec.Duration
	DrainPoll    spec.Duration
	// ForeignDrain is rollout { foreign_drain }; "" means skip.
	ForeignDrain spec.ForeignDrainPolicy
	// SlurmNodeName is rollout { slurm_node_name }, a template; "" means
	// the host's own short host name.
	SlurmNodeName string
	// SlurmClient is rollout { slurm_client }: the host that runs scontrol;
	// "" means each host.
	SlurmClient string
	// Unit is rollout { unit }: spec.RolloutUnitNVLinkDomain when Batch
	// and MaxFailures count whole NVLink domains; "" counts hosts.
	Unit spec.RolloutUnit
	// Domains are the node's NVLink domains with their planned hosts,
	// the units apply batches when Unit is spec.RolloutUnitNVLinkDomain.
	Domains []RolloutDomain
}

// HostPlan is the plan for one host.
type HostPlan struct {
	// Host is the inventory name.
	Host string
	// Node is the name of the node block the host belongs to.
	Node string
	// Target is the host and the node block it came from; Target.Node is
	// nil in a plan read back from a plan file, which holds names only.
	Target target.Host
	// FactsFingerprint is facts.Node.Fingerprint of the facts the plan was
	// made from; apply refuses a saved plan when it no longer matches.
	FactsFingerprint string
	// Error is why the host could not be probed or planned.
	Error string
	// Warnings are settings gpuform leaves alone on this host.
	Warnings []string
	// VerifyNotes say what verify will not require of the host because of
	// what the spec leaves out ("dcgm: optional, the spec installs no
	// DCGM"), so that it is never silent.
	VerifyNotes []string
	// Images are the knowledge base's verdicts on the node's container
	// images against the driver the host runs after apply (judgeImages);
	// only images with a warning or an error are listed.
	Images []ImageVerdict
	// ResourceChanges are the resources in the order apply converges them;
	// unchanged resources are listed with action no-op.
	ResourceChanges []ResourceChange
	// RebootRequired is true when some change needs a reboot.
	RebootRequired bool
	// RebootPending is true when the host already waits for a reboot to
	// run what is configured.
	RebootPending bool
	// Slurm is where the host stands in Slurm and what apply will do
	// there, for hosts of a node with drain = "slurm"; nil otherwise.
	Slurm *SlurmPlan
	// Summary counts the changes.
	Summary Summary
	// FabricDomain is the NVLink domain the host's GPUs registered in
	// ("CLUSTER-UUID/CLIQUE", facts.NVLinkFabric.Domain), for a host of an
	// nvlink_domain block read from the fabric; FabricError says why there
	// is none (the fabric is not up, or could not be read).
	FabricDomain string
	FabricError  string

	// redactor hides the node's sensitive values in text the host sends
	// back (a failing step's output may quote a package version).
	redactor *spec.Redactor
}

// Redact returns text from or about the host with the node's sensitive
// values replaced by spec.Redacted.
func (h *HostPlan) Redact(text string) string {
	return h.redactor.Redact(text)
}

// Value is one attribute's value: the resource's value, kind and text
// (spec.Redacted when Sensitive).
type Value struct {
	resource.Value
	// Sensitive is true when the value comes from a sensitive spec value
	// and Text is spec.Redacted.
	Sensitive bool
}

// Attrs are a resource's attributes by name; nil when the resource is
// absent (before) or will be deleted (after).
type Attrs map[string]Value

// ResourceChange is one resource's planned change: the resource layer's
// Change, with its attributes typed and sensitive ones hidden.
type ResourceChange struct {
	// Change is the resource's change, steps included. Its Before and
	// After are nil: the attributes live, typed and redacted, in the
	// fields below.
	resource.Change
	// Before is the actual value; nil when absent.
	Before Attrs
	// After is the desired value; nil when it will be deleted.
	After Attrs

	// sensitiveChanged names the hidden attributes whose value changes,
	// which their redacted text no longer tells (kept in memory only).
	sensitiveChanged map[string]bool
}

// planAttrs is the resource's values m as plan attributes, none of them
// hidden yet (hideSensitive hides them).
func planAttrs(m resource.Values) Attrs {
	if m == nil {
		return nil
	}
	out := make(Attrs, len(m))
	for k, v := range m {
		out[k] = Value{Value: v}
	}
	return out
}

// Summary counts changes like Terraform's "Plan:" line.
type Summary struct {
	// Add counts creates.
	Add int `json:"add"`
	// Change counts in-place updates.
	Change int `json:"change"`
	// Destroy counts deletes.
	Destroy int `json:"destroy"`
}

// Total is the number of changes.
func (s Summary) Total() int { return s.Add + s.Change + s.Destroy }

func (s *Summary) add(o Summary) {
	s.Add += o.Add
	s.Change += o.Change
	s.Destroy += o.Destroy
}

// HasChanges reports whether any host has a change.
func (p *Plan) HasChanges() bool { return p.Summary.Total() > 0 }

// RebootPending reports whether some host waits for a reboot to run what
// is installed: plan -detailed-exitcode counts it as a change, since the
// hosts do not yet run the spec.
func (p *Plan) RebootPending() bool {
	for _, h := range p.Hosts {
		if h.RebootPending {
			return true
		}
	}
	return false
}

// Host returns the plan of the named host.
func (p *Plan) Host(name string) *HostPlan {
	for _, h := range p.Hosts {
		if h.Host == name {
			return h
		}
	}
	return nil
}

// HasChanges reports whether the host has any change.
func (h *HostPlan) HasChanges() bool { return h.Summary.Total() > 0 }

// Make diffs every target against its probed facts. It does not touch the
// network, so a plan can be made again from the same facts and come out
// identical. Package names, GPU models and image verdicts come from k.
func Make(k *kb.KB, probed []target.Probed) *Plan {
	hps := make([]*HostPlan, len(probed))
	reds, scripts, changes := newRedactors(), newSharedScripts(), newSharedChanges()
	for i, pr := range probed {
		hps[i] = planProbed(k, reds, pr)
		scripts.share(hps[i])
		changes.share(hps[i])
	}
	return assemble(hps)
}

// assemble puts the host plans, in spec order, into one plan: the node
// blocks' rollouts and the totals.
func assemble(hps []*HostPlan) *Plan {
	p := &Plan{}
	nodeIdx := map[string]int{}
	for _, hp := range hps {
		t := hp.Target
		i, ok := nodeIdx[t.Node.Name]
		if !ok {
			i = len(p.Nodes)
			nodeIdx[t.Node.Name] = i
			p.Nodes = append(p.Nodes, rolloutOf(t.Node))
		}
		p.Nodes[i].Hosts = append(p.Nodes[i].Hosts, t.Host.Name)
		p.Hosts = append(p.Hosts, hp)
		if hp.Error != "" {
			p.Errored = true
		}
		p.Summary.add(hp.Summary)
	}
	targets := make([]target.Host, len(hps))
	for i, hp := range hps {
		targets[i] = hp.Target
	}
	domainGuard(p, targets)
	p.Applyable = !p.Errored && p.HasChanges()
	return p
}

// planProbed makes one host's plan from its probe. The plan keeps the
// facts' fingerprint, not the facts: a fleet's plan would otherwise hold
// every node's facts until it is rendered.
func planProbed(k *kb.KB, reds *redactors, pr target.Probed) *HostPlan {
	t := pr.Host
	hp := &HostPlan{Host: t.Host.Name, Node: t.Node.Name, Target: t, ResourceChanges: []ResourceChange{}}
	if t.Node.FabricDomainBlock(t.Host.Name) != nil {
		err := errors.New("the host was not probed")
		if pr.Facts != nil {
			hp.FabricDomain, err = pr.Facts.Fabric.Domain()
		}
		if err != nil {
			hp.FabricError = err.Error()
		}
	}
	switch {
	case pr.Err != nil:
		hp.Error = target.ErrorText(pr.Err)
	case pr.Facts == nil:
		hp.Error = "not probed"
	case k == nil:
		hp.Error = errNoKB.Error()
	default:
		hp.FactsFingerprint = pr.Facts.Fingerprint()
		err := planHost(k, reds.of(t.Node), hp, t.Node, pr.Facts)
		var problems []preflight.Problem
		if err != nil || len(hp.ResourceChanges) > 0 {
			// The node manages something on the host. A
			// verification-only spec applies nothing, and what it
			// assumes of the hardware is verify's to check.
			problems = preflight.Hardware(k, t.Node, pr.Facts)
		}
		// Every release the changes install must be offered by the
		// host's repositories, checked before anything runs.
		problems = append(problems, preflight.Packages(missingReleases(hp.ResourceChanges), pr.Facts.Offers)...)
		if err != nil || hp.HasChanges() || hp.RebootPending || len(problems) > 0 {
			// Apply would run steps here (or could not be planned
			// at all): it needs root.
			problems = append(problems, preflight.Privileges(t.Host, pr.Facts)...)
		}
		switch {
		case len(problems) > 0:
			// A host the spec cannot apply to has no plan: its
			// changes would fail or do harm.
			hp.Error = preflight.Message(problems)
			hp.ResourceChanges = []ResourceChange{}
			hp.Images = nil
			hp.Summary = Summary{}
			hp.RebootRequired, hp.RebootPending = false, false
		case err != nil:
			hp.Error = err.Error()
		}
	}
	return hp
}

// sharedScripts holds one copy of each step script, input and check
// text among the hosts of a plan: the hosts of a fleet mostly run the
// same steps, and each step's script (the nodesh prelude, its libraries
// and its body) is kilobytes, built anew for every host. A host's copies
// are dropped as soon as it is planned, not when the last host is. The
// hosts' warnings, verify notes and errors are held once the same way (a
// driver advisory's warning is half a kilobyte a host). Safe for
// concurrent use.
type sharedScripts struct {
	mu sync.Mutex
	m  map[string]string
}

func newSharedScripts() *sharedScripts { return &sharedScripts{m: map[string]string{}} }

// share points hp's step texts at the copies already held.
func (s *sharedScripts) share(hp *HostPlan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	one := func(t *string) {
		if *t == "" {
			return
		}
		if c, ok := s.m[*t]; ok {
			*t = c
			return
		}
		s.m[*t] = *t
	}
	one(&hp.Error)
	for i := range hp.Warnings {
		one(&hp.Warnings[i])
	}
	for i := range hp.VerifyNotes {
		one(&hp.VerifyNotes[i])
	}
	for i := range hp.ResourceChanges {
		steps := hp.ResourceChanges[i].Steps
		for j := range steps {
			one(&steps[j].Script)
			one(&steps[j].Input)
			one(&steps[j].Check)
		}
	}
}

// missingReleases are the releases the changes install that the host's
// repositories do not offer.
func missingReleases(changes []ResourceChange) []preflight.MissingRelease {
	var out []preflight.MissingRelease
	for _, rc := range changes {
		for _, m := range rc.Missing {
			out = append(out, preflight.MissingRelease{Resource: rc.Resource, Missing: m})
		}
	}
	return out
}

func rolloutOf(n *spec.Node) NodeRollout {
	r := NodeRollout{Name: n.Name, MaxFailures: -1, Reboot: spec.RebootNever}
	if n.Rollout != nil {
		if n.Rollout.Batch.Set {
			r.Batch = n.Rollout.Batch.V
		}
		// A rollout block without max_failures stops at the first failure:
		// whoever writes a rollout block wants a budget, and zero is the
		// safe one.
		r.MaxFailures = 0
		if n.Rollout.MaxFailures.Set {
			r.MaxFailures = n.Rollout.MaxFailures.V
		}
		if n.Rollout.Reboot.Set {
			r.Reboot = n.Rollout.Reboot.V
		}
		if n.Rollout.Drain.V == spec.DrainSlurm {
			r.Drain = spec.DrainSlurm
		}
		if n.Rollout.StepTimeout.Set {
			r.StepTimeout = n.Rollout.StepTimeout.V
		}
		if n.Rollout.Unit.V == spec.RolloutUnitNVLinkDomain {
			r.Unit = spec.RolloutUnitNVLinkDomain
		}
		if r.Drain == spec.DrainSlurm {
			r.DrainTimeout = n.Rollout.DrainTimeout.V
			r.DrainPoll = n.Rollout.DrainPoll.V
			r.ForeignDrain = n.Rollout.ForeignDrain.V
			r.SlurmNodeName = n.Rollout.SlurmNodeName.V
			r.SlurmClient = n.Rollout.SlurmClient.V
		}
	}
	return r
}

// redactors makes each node block's Redactor once for a plan: it walks
// every value of the node, its host list included, and made per host
// it cost a plan of N hosts N² (a plan of 1,000 hosts spent most of its
// time and memory there). Safe for concurrent use.
type redactors struct {
	mu sync.Mutex
	m  map[*spec.Node]*spec.Redactor
}

func newRedactors() *redactors { return &redactors{m: map[*spec.Node]*spec.Redactor{}} }

func (r *redactors) of(n *spec.Node) *spec.Redactor {
	r.mu.Lock()
	defer r.mu.Unlock()
	red, ok := r.m[n]
	if !ok {
		red = n.Redactor()
		r.m[n] = red
	}
	return red
}

// planHost fills hp from the node's resources diffed against f; red is
// n's Redactor.
func planHost(k *kb.KB, red *spec.Redactor, hp *HostPlan, n *spec.Node, f *facts.Node) error {
	hp.redactor = red
	changes, warnings, err := diff(k, red, n, f)
	if err != nil {
		return err
	}
	hp.Warnings = append(warnings, driverAdvisoryWarnings(k, n, f)...)
	if n.DCGMOptionalByDefault() {
		hp.VerifyNotes = append(hp.VerifyNotes, spec.DCGMOptionalNote+" (verify -tier quick skips dcgm.diag on a host without dcgmi)")
	}
	hp.ResourceChanges = changes
	hp.Images = judgeImages(k, n, f, changes)
	for _, rc := range changes {
		switch rc.Action {
		case resource.Create:
			hp.Summary.Add++
		case resource.Update:
			hp.Summary.Change++
		case resource.Delete:
			hp.Summary.Destroy++
		}
		hp.RebootRequired = hp.RebootRequired || rc.RebootRequired
		hp.RebootPending = hp.RebootPending || rc.RebootPending
	}
	return nil
}

// errNoKB is a caller's bug: plans are made against the knowledge base.
var errNoKB = errors.New("no knowledge base was given to the plan (a bug in gpuform)")

// Diff returns the resource changes of node n on a host with facts f, in
// apply order. Resources that neither exist nor are wanted are left out.
// When n has an Owner, the changes respect what the host's owner records
// say each spec manages (see own).
func Diff(k *kb.KB, n *spec.Node, f *facts.Node) ([]ResourceChange, []string, error) {
	return diff(k, n.Redactor(), n, f)
}

// diff is Diff with n's Redactor made already.
func diff(k *kb.KB, red *spec.Redactor, n *spec.Node, f *facts.Node) ([]ResourceChange, []string, error) {
	if k == nil {
		return nil, nil, errNoKB
	}
	rs, warnings, err := resource.Build(k, n, f)
	if err != nil {
		return nil, nil, redactErr(red, err)
	}
	for i, w := range warnings {
		warnings[i] = red.Redact(w)
	}
	sens := sensitiveAttrs(n)
	var out []ResourceChange
	var errs []error
	for _, r := range rs {
		c, err := r.Diff(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if c.Action == resource.NoOp && c.Before == nil && c.After == nil {
			continue
		}
		if c.Action == resource.Create && changesLiveValue(c.Before, c.After) {
			// The file gpuform manages is new, but the host already has
			// a value that it changes: for the person reading the plan
			// that is an update ("~ x = 1 -> 0"), not an addition.
			c.Action = resource.Update
		}
		rc := ResourceChange{Change: c, Before: planAttrs(c.Before), After: planAttrs(c.After)}
		rc.Change.Before, rc.Change.After = nil, nil
		hideSensitive(&rc, sens[rc.Resource])
		// A path can carry a sensitive value (a conf_dir from a
		// sensitive variable).
		rc.Path = red.Redact(rc.Path)
		if !red.Empty() && len(rc.Steps) > 0 {
			// Descriptions are printed by apply; the scripts keep the
			// values, which they need.
			steps := make([]resource.Step, len(rc.Steps))
			for i, st := range rc.Steps {
				st.Description = red.Redact(st.Description)
				steps[i] = st
			}
			rc.Steps = steps
		}
		out = append(out, rc)
	}
	if err := errors.Join(errs...); err != nil {
		return []ResourceChange{}, warnings, redactErr(red, err)
	}
	if n.Owner.Claims() {
		if out, err = own(n.Owner, out, f); err != nil {
			return []ResourceChange{}, warnings, redactErr(red, err)
		}
	}
	if out == nil {
		out = []ResourceChange{}
	}
	return out, warnings, nil
}

// changesLiveValue reports whether after replaces a value the host has
// (non-empty in before) with a different one.
func changesLiveValue(before, after resource.Values) bool {
	for k, b := range before {
		if a, ok := after[k]; ok && b.Text != "" && a != b {
			return true
		}
	}
	return false
}

// redactErr hides sensitive values in err's text (resource checks quote
// the value they refuse).
func redactErr(red *spec.Redactor, err error) error {
	if err == nil || red.Empty() {
		return err
	}
	if s := red.Redact(err.Error()); s != err.Error() {
		return errors.New(s)
	}
	return err
}

// Run probes hosts (chosen by target.Select) the way every command does,
// makes the plan and runs its step checks on the hosts (Preflight): the
// path of plan and apply. Host failures are part of the plan (Errored);
// the error is for a context that ended first.
// Each host's probe also asks its package manager which versions its
// repositories offer of the packages the spec installs there
// (facts.QueryOffers, from the metadata the host has: nothing is
// refreshed), so that the plan resolves floating versions to the release
// that will be installed and refuses a release no repository offers.
// For a node with drain = "slurm" it also reads each host's Slurm state
// and records what apply will do there (HostPlan.Slurm).
func Run(ctx context.Context, k *kb.KB, hosts []target.Host, o target.Options) (*Plan, error) {
	return RunPinned(ctx, k, hosts, o, nil)
}

// RunPinned is Run for apply of a saved plan: pins are the releases the
// saved plan resolved, by host and package (SavedReleases), and each
// host's offers are narrowed to them, so that the plan resolves exactly
// what was shown, or refuses the host when a pinned release is no longer
// offered.
func RunPinned(ctx context.Context, k *kb.KB, hosts []target.Host, o target.Options, pins map[string]map[string]string) (*Plan, error) {
	return RunProbed(ctx, k, hosts, o, pins, nil)
}

// ProbedHook sees each host's probe before the host is planned, and may
// change its facts: plan -bundle replaces what the host's repositories
// offer with what the bundle holds. An error fails the host's plan with
// its text; nothing runs on a host whose plan failed.
type ProbedHook func(pr target.Probed) error

// RunProbed is RunPinned with hook called on each host's probe (nil: none).
func RunProbed(ctx context.Context, k *kb.KB, hosts []target.Host, o target.Options, pins map[string]map[string]string, hook ProbedHook) (*Plan, error) {
	o.Packages = func(n *spec.Node) []string { return resource.OfferedNames(k, n) }
	// Each host is planned as soon as it is probed, in the goroutine that
	// probed it, and its facts are dropped then: the plan of a thousand
	// hosts never holds a thousand hosts' facts.
	var hps []*HostPlan
	reds, scripts, changes := newRedactors(), newSharedScripts(), newSharedChanges()
	err := target.ProbeEach(ctx, hosts, o, func(n int) { hps = make([]*HostPlan, n) }, func(i int, pr target.Probed) {
		if pr.Facts != nil && pr.Facts.Offers != nil {
			for name, v := range pins[pr.Host.Host.Name] {
				if vs, ok := pr.Facts.Offers.Versions[name]; ok {
					pr.Facts.Offers.Versions[name] = slices.DeleteFunc(slices.Clone(vs), func(x string) bool { return !sameVersion(x, v) })
				}
			}
		}
		if hook != nil && pr.Facts != nil {
			if err := hook(pr); err != nil {
				pr = target.Probed{Host: pr.Host, Err: err}
			}
		}
		hps[i] = planProbed(k, reds, pr)
		scripts.share(hps[i])
		changes.share(hps[i])
	})
	if err != nil {
		return nil, err
	}
	p := assemble(hps)
	Preflight(ctx, p, o)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Hosts drained through Slurm: the plan says what apply will do there,
	// from the state Slurm shows now (slurm.go).
	previewSlurm(ctx, p, o)
	return p, nil
}

// sameVersion reports whether an offered version is a pinned one (dnf pins
// carry no epoch).
func sameVersion(offered, pinned string) bool {
	if offered == pinned {
		return true
	}
	_, rest, ok := strings.Cut(offered, ":")
	return ok && rest == pinned
}

// SavedReleases are the exact package releases a saved plan resolved, by
// host and package, for RunPinned.
func SavedReleases(p *Plan) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, h := range p.Hosts {
		for _, rc := range h.ResourceChanges {
			for name, v := range rc.Releases {
				if out[h.Host] == nil {
					out[h.Host] = map[string]string{}
				}
				out[h.Host][name] = v
			}
		}
	}
	return out
}

// SlurmAction is what apply does with a host in Slurm.
type SlurmAction string

// Slurm actions, as the plan shows them.
const (
	// SlurmDrain drains the host before its changes and resumes it after.
	SlurmDrain SlurmAction = "drain"
	// SlurmSkipForeign leaves a host alone that is drained or down for a
	// reason that is not gpuform's.
	SlurmSkipForeign SlurmAction = "skip"
	// SlurmChangeForeign changes a host drained or down for someone
	// else's reason and leaves it so (rollout { foreign_drain = "change" }).
	SlurmChangeForeign SlurmAction = "change-keep-drained"
	// SlurmResumeStale resumes a host gpuform drained earlier that has
	// nothing left to do.
	SlurmResumeStale SlurmAction = "resume"
	// SlurmNone leaves the host's Slurm state as it is.
	SlurmNone SlurmAction = "none"
)

// SlurmPlan is a host's Slurm state when planned and what apply will do.
type SlurmPlan struct {
	// Node is the Slurm node name.
	Node string `json:"node"`
	// State is Slurm's State= ("IDLE", "MIXED+DRAIN").
	State string `json:"state,omitempty"`
	// Reason is the drain or down reason, "" when none.
	Reason string `json:"reason,omitempty"`
	// Action is what apply will do.
	Action SlurmAction `json:"action"`
	// Error says why the state could not be read.
	Error string `json:"error,omitempty"`
}
