// Package runner verifies the hosts of a spec: for each host it connects
// (through provision/target, like every command; --local is a local://
// host), runs the facts probe, gathers NVML facts (the agent on the node,
// or the mock system a transport offers as transport.NVMLMocker), runs
// the tier's workloads and judges the result against what the spec
// expects. At the fleet tier it runs each node group's multi-node tests
// once, isolates a failing group's bad node pairwise (provision/verify/isolate
// decides the pairs; the runner launches and judges them); at every tier
// it compares GPUs with their peers (provision/outlier). It returns a report.Document;
// it renders nothing and decides no exit code, which are the CLI's.
package runner

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/burnin"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/spec"
)

// Options say how to run verification.
type Options struct {
	// Tier selects the checks and the time budget per host.
	Tier verify.Tier
	// KB is the knowledge base the checks judge by (verify.Expectation.KB)
	// and the report's driver advisories come from.
	KB *kb.KB
	// Target is how hosts are reached and run: Connect, Parallelism and
	// Progress, as for every command (its ProbeTimeout is not used: the
	// tier's Budget bounds the whole host).
	Target target.Options
	// AllowLocal lets the spec's nccl_test commands run on this machine
	// for sim:// and local:// hosts (-allow-local).
	AllowLocal bool
	// AgentBinary is this gpuform binary, copied to nodes of the same
	// architecture to collect NVML facts; "" uses nvidia-smi only.
	AgentBinary string
	// Local says the target is this machine, verified at the operator's
	// own request (--local, Slurm's HealthCheckProgram mode): it is reached
	// through Target.Connect like any host (a local:// transport), but
	// runs no multi-node tests and needs no -allow-local for nccl-tests.
	Local bool
	// HostRoot, with Local, is where the node's root filesystem is
	// mounted on this machine (a pod's read-only hostPath /, verify
	// --local -host-root): the probe reads the node's files there, so
	// the spec.* checks judge the node's packages and configuration
	// rather than the container image's. "" reads this machine's own.
	HostRoot string
	// Budget is the hard wall-clock limit per host, connecting and
	// probing included; zero means the tier's Budget.
	Budget time.Duration
	// Processes asks NVML for the compute processes on each GPU and
	// judges their CPU and NIC binding (verify -processes).
	Processes bool
	// ValidFor is how long the report stands after it was taken (its
	// expires_at); zero means spec.DefaultValidFor.
	ValidFor time.Duration
	// XIDWindow is how long NVML is listened to for Xid events; zero
	// means the tier's (Tier.XIDWindow). The Slurm prolog and epilog
	// gates listen briefly: the kernel log holds every Xid since boot,
	// and a job waits on the prolog.
	XIDWindow time.Duration
	// KernelSince, when set, judges only the kernel log's Xids logged
	// from then on (the epilog gate: the job's start).
	KernelSince time.Time

	// What an engine other than SSH (provision/engine) replaces. Each
	// is nil for the SSH fan-out, which connects through Target.

	// Launch, when set, runs a multi-node test's (or an isolation
	// pair's) command from the node of host from, in place of connecting
	// to it: the slurm engine runs it as an srun step there.
	Launch func(ctx context.Context, from target.Host, command string, timeout time.Duration) (nccltest.Result, error)
	// LaunchNames, when set, names a group's hosts as the launcher knows
	// them (Slurm node names), in place of reading each host's own name
	// over Target.
	LaunchNames func(ctx context.Context, group []target.Host) map[string]string
	// MultiNodeResults, when set, are the multi-node results this host
	// is judged on, run by the engine before the node was verified
	// (MultiNode.ForHost on the controller, carried to the node).
	MultiNodeResults map[string]nccltest.Result
	// Deadline, when set, ends isolation no later than it (the -deadline
	// of the whole run); zero leaves the tier's budget.
	Deadline time.Time
	// RequireBurnin judges each host's burn-in record (verify
	// -require-burnin): burnin.record fails a host without a valid one.
	RequireBurnin bool
	// Now, when set, is the time burn-in records are judged at; zero is
	// the wall clock (a test's simulated clock sets it).
	Now func() time.Time
}

// MultiNode is what the fleet tier's multi-node tests found for each node
// group, before the per-host checks judge it.
type MultiNode struct {
	results    map[*spec.Node]map[string]nccltest.Result
	absent     map[string]map[string]string
	isolations []groupIsolation
}

// RunMultiNode runs, at the fleet tier, every group's multi-node tests
// and their isolation, as Run does before it verifies the hosts: for an
// engine that verifies the hosts elsewhere.
func RunMultiNode(ctx context.Context, targets []target.Host, o Options) MultiNode {
	r, a, iso := runMultiNode(ctx, targets, o)
	return MultiNode{results: r, absent: a, isolations: iso}
}

// ForHost is the multi-node results tg is judged on (Options.MultiNodeResults).
func (m MultiNode) ForHost(tg target.Host) map[string]nccltest.Result {
	return hostResults(m.results[tg.Node], m.absent[tg.Host.Name])
}

// JudgeHost judges h's multi-node checks on the group's results for tg
// (ForHost), replacing the ones the host's own run left not run: for an
// engine that verified the host before the group's tests ran, so a
// -deadline that ends those tests leaves the host's own checks reported.
// A test with no result for the host stays not run, never passed. The
// host's NCCL results gain the group's, as Run gives them.
func (m MultiNode) JudgeHost(tg target.Host, h *report.Host, o Options) {
	results := m.ForHost(tg)
	exp := verify.ExpectationFor(tg.Node)
	exp.Processes = o.Processes
	exp.KB = o.KB
	for _, t := range exp.NCCL {
		if !t.MultiNode {
			continue
		}
		id := verify.CheckNCCL.Named(t.Name)
		i := slices.IndexFunc(h.Checks, func(c verify.CheckResult) bool { return c.ID == id })
		if i < 0 {
			continue
		}
		res, ran := results[t.Name]
		h.Checks[i] = verify.JudgeHostMultiNode(exp, h.NVML, o.Tier, t, res, ran)
		if ran {
			if h.NCCL == nil {
				h.NCCL = map[string]nccltest.Result{}
			}
			h.NCCL[t.Name] = res
		}
	}
}

// AddChecks gives the hosts of each isolated group their isolation
// checks, before Merge counts them.
func (m MultiNode) AddChecks(hosts []report.Host) { addIsolationChecks(hosts, m.isolations) }

// AddIsolation adds each group's isolation section to the report.
func (m MultiNode) AddIsolation(doc *report.Document) {
	for _, iso := range m.isolations {
		doc.Isolation = append(doc.Isolation, iso.Isolation)
	}
}

// Run verifies every target and returns the report.
func Run(ctx context.Context, targets []target.Host, o Options) *report.Document {
	checkedAt := time.Now().UTC()
	var names []string
	seen := map[string]bool{}
	for _, t := range targets {
		if !seen[t.Host.Name] {
			seen[t.Host.Name] = true
			names = append(names, t.Host.Name)
		}
	}
	multi, absent, isolations := runMultiNode(ctx, targets, o)
	peerRuns := burninGroupRuns(ctx, targets, o, multi)
	// Each target's burn-in record waits here for finishBurnin; made
	// before the hosts run, so each run writes only its own.
	pending := map[string]*burninPending{}
	for _, tg := range targets {
		pending[tg.Host.Name] = &burninPending{}
	}

	var mu sync.Mutex
	results := map[string]report.Host{}
	errs := target.Each(ctx, targets, o.Target, func(ctx context.Context, tg target.Host) error {
		name := tg.Host.Name
		start := time.Now()
		budget := hostBudget(o, tg)
		// The tier's budget is hard for the whole host: a node whose
		// sshd, probe or NVML hangs (a wedged GPU) must not hold verify,
		// or Slurm's HealthCheckProgram, past it.
		hctx, cancel := context.WithTimeout(ctx, budget)
		defer cancel()
		err := RefuseLocalNCCL(tg, o)
		var h report.Host
		if err == nil {
			results := hostResults(multi[tg.Node], absent[tg.Host.Name])
			if o.MultiNodeResults != nil {
				results = o.MultiNodeResults
			}
			var peer map[string][]nccltest.Result
			for name, its := range peerRuns[tg.Node] {
				if _, out := absent[tg.Host.Name][name]; !out {
					if peer == nil {
						peer = map[string][]nccltest.Result{}
					}
					peer[name] = its
				}
			}
			h, err = verifyHost(hctx, tg, o, results, peer, pending[name])
		}
		if err != nil {
			if errors.Is(hctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
				err = fmt.Errorf("the %s tier's budget of %s ran out before the checks could run (%w)", o.Tier, budget.Round(time.Millisecond), withoutHost(err))
			}
			h = report.UnreachableHost(name, withoutHost(err), time.Since(start))
		}
		mu.Lock()
		results[name] = h
		mu.Unlock()
		if hostFailed(h) {
			return fmt.Errorf("%d check(s) failed", failedChecks(h))
		}
		return nil
	})
	hosts := make([]report.Host, 0, len(names))
	for _, name := range names {
		h, ok := results[name]
		if !ok {
			// Never started (interrupted): still a failed check.
			h = report.UnreachableHost(name, errs[name], 0)
		}
		hosts = append(hosts, h)
	}
	if o.Tier == verify.TierBurnin {
		finishBurnin(ctx, hosts, pending, o)
	}
	addIsolationChecks(hosts, isolations)
	doc := Merge(targets, hosts, o, checkedAt)
	for _, iso := range isolations {
		doc.Isolation = append(doc.Isolation, iso.Isolation)
	}
	return doc
}

// Merge builds the report of hosts whose checks are done — by Run, or by
// an engine that ran verify --local on every node at once and collected
// their reports (provision/engine/slurm) — as Run builds it: the peer
// outliers across the hosts, the summary, the groups and the report's
// checked_at and expires_at. Its work is linear in the hosts' reports.
func Merge(targets []target.Host, hosts []report.Host, o Options, checkedAt time.Time) *report.Document {
	addDomainChecks(targets, hosts)
	findings := peerOutliers(targets, hosts)
	doc := report.New(o.KB, o.Tier, hosts)
	doc.Outliers = findings
	validFor := o.ValidFor
	if validFor <= 0 {
		validFor = spec.DefaultValidFor
	}
	doc.CheckedAt, doc.ExpiresAt = checkedAt, checkedAt.Add(validFor)
	return doc
}

func hostFailed(h report.Host) bool { return failedChecks(h) > 0 }

func failedChecks(h report.Host) int {
	n := 0
	for _, c := range h.Checks {
		if c.Blocks() {
			n++
		}
	}
	return n
}

// verifyHost runs one host. An error means the host could not be reached
// or probed at all; everything after that is a check result.
//
// peer are, at the burn-in tier, the iterations of each multi-node
// nccl_test of the host's group it took part in (burninGroupRuns).
func verifyHost(ctx context.Context, tg target.Host, o Options, multi map[string]nccltest.Result, peer map[string][]nccltest.Result, pending *burninPending) (report.Host, error) {
	start := time.Now()
	t, err := o.Target.Connect(ctx, tg.Host)
	if err != nil {
		return report.Host{}, err
	}
	defer t.Close()

	node, err := target.VerifyProbeOver(ctx, t, tg.Host, tg.Node, o.HostRoot)
	if err != nil {
		return report.Host{}, err
	}
	exp := verify.ExpectationFor(tg.Node)
	exp.Processes = o.Processes
	exp.KB = o.KB

	hopts := verify.HostOptions{Node: node, NCCL: multi, Become: tg.Host.Become != "", KernelSince: o.KernelSince, HostRoot: o.HostRoot}
	xidWindow := o.Tier.XIDWindow()
	if o.XIDWindow > 0 {
		xidWindow = o.XIDWindow
		hopts.Fetch.Agent.Collect.XIDWindow = o.XIDWindow
	}
	hopts.Fetch.LocalBinary = agentFor(o.AgentBinary, node)
	hopts.Fetch.Agent.Collect.NICs = nicsOf(tg.Node)
	hopts.Fetch.Agent.Collect.Processes = o.Processes
	var nvmlErr error
	// A node whose NVML is a mock (a simulated node, --local -mock-nvml)
	// answers in process. Real NVML on --local runs in the agent
	// subprocess like on a remote node, so a hang inside the driver's C
	// library is killed with the process when the tier's budget runs out
	// (Slurm kills a HealthCheckProgram after 60 s).
	if m, ok := t.(transport.NVMLMocker); ok {
		hopts.Report, nvmlErr = mockedNVML(ctx, tg.Host.Name, m, node, nvmlfacts.Options{XIDWindow: xidWindow, NICs: hopts.Fetch.Agent.Collect.NICs, Processes: o.Processes})
	}
	if errors.Is(nvmlErr, transport.ErrNoNVMLAgent) {
		// No NVML the agent could read: nvidia-smi, as on a real node
		// where the agent cannot run.
		hopts.Fetch.LocalBinary, hopts.Fetch.NoAgent, nvmlErr = "", nvmlErr.Error(), nil
	}
	if nvmlErr != nil {
		hopts.NVMLError = nvmlErr.Error()
	}
	var seen verify.Gathered
	hopts.Gathered = &seen
	checks, err := verify.RunHost(ctx, t, exp, o.Tier, hopts)
	if err != nil {
		return report.Host{}, err
	}
	if o.Tier == verify.TierBurnin {
		readNVML := func(ctx context.Context) (*nvmlfacts.Report, error) {
			if m, ok := t.(transport.NVMLMocker); ok && hopts.Report != nil {
				return mockedNVML(ctx, tg.Host.Name, m, node, nvmlfacts.Options{XIDWindow: xidWindow, NICs: hopts.Fetch.Agent.Collect.NICs})
			}
			return verify.FetchNVML(ctx, t, hopts.Fetch)
		}
		checks = append(checks, runBurnin(ctx, t, tg, exp, seen.NVML, readNVML, peer, pending, o)...)
	}
	if o.RequireBurnin {
		checks = append(checks, burninRecordCheck(ctx, t, seen.NVML, tg.Node, o.Now))
	}
	h := report.NewHost(tg.Host.Name, checks, time.Since(start))
	h.NVML, h.NCCL, h.Kernel, h.NICs, h.Firmware = verify.RedactNVML(exp, seen.NVML), seen.NCCL, seen.Kernel, seen.NICs, seen.Firmware
	return h, nil
}

// burninRecordCheck reads the host's burn-in record and judges it against
// the NVML report of this run and the node block's max_age.
func burninRecordCheck(ctx context.Context, t transport.Transport, rep *nvmlfacts.Report, n *spec.Node, now func() time.Time) verify.CheckResult {
	if now == nil {
		now = time.Now
	}
	data, found, err := burnin.ReadRecord(ctx, t)
	return verify.BurninRecordCheck(data, found, err, rep, now(), verify.BurninMaxAge(n), verify.BurninDuration(n))
}

// mockedNVML answers NVML from the mock system the transport offers. A
// mock that follows the driver (a simulated node) reports the driver the
// node's facts show loaded, and has no NVML without one, as a real node
// would not.
func mockedNVML(ctx context.Context, host string, m transport.NVMLMocker, node *facts.Node, collect nvmlfacts.Options) (*nvmlfacts.Report, error) {
	mock, err := m.NVMLMock()
	if err != nil {
		return nil, err
	}
	opts := nvmlfacts.AgentOptions{Mock: mock.System, Collect: collect, SimRoot: mock.Root}
	for _, s := range mock.Faults {
		f, err := nvmlfacts.ParseFault(s)
		if err != nil {
			return nil, fmt.Errorf("simulated NVML of %s: %w", host, err)
		}
		opts.Faults = append(opts.Faults, f)
	}
	if mock.FollowsDriver {
		if node.Driver == nil {
			return nil, fmt.Errorf("NVML cannot initialise: no NVIDIA driver is loaded on %s (/proc/driver/nvidia/version is absent)", host)
		}
		opts.DriverVersion = node.Driver.Version
	}
	return nvmlfacts.CollectAgent(ctx, opts)
}

// agentFor returns the agent binary to copy to a node, or "" when this
// binary cannot run there (another CPU architecture); verify then falls
// back to nvidia-smi and says so.
func agentFor(binary string, node *facts.Node) string {
	if binary == "" || node == nil {
		return binary
	}
	arch := map[string]string{"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64", "amd64": "amd64"}[node.Arch]
	if arch != "" && arch != runtime.GOARCH {
		return ""
	}
	return binary
}

// nicsOf lists the NICs the spec pairs GPUs with, with their PCI address
// from the hardware profile, so the agent can compute GPU–NIC topology.
func nicsOf(n *spec.Node) []nvmlfacts.NIC {
	if n.Hardware == nil || n.Affinity == nil {
		return nil
	}
	var out []nvmlfacts.NIC
	seen := map[string]bool{}
	for _, nic := range n.Affinity.GPUNIC {
		hn, ok := n.Hardware.NIC(nic.V)
		if !ok || hn.PCI == "" || seen[hn.Name] {
			continue
		}
		seen[hn.Name] = true
		out = append(out, nvmlfacts.NIC{Name: hn.Name, BusID: strings.ToLower(hn.PCI)})
	}
	return out
}

// runMultiNode runs, at the fleet tier, each node's multi-node nccl-tests
// once from its first host and returns the results per node, to be judged
// on every host of the node, with the pairwise isolation of each group
// whose run failed (or of every group, with verify { isolation = "always" }).
func runMultiNode(ctx context.Context, targets []target.Host, o Options) (map[*spec.Node]map[string]nccltest.Result, map[string]map[string]string, []groupIsolation) {
	out := map[*spec.Node]map[string]nccltest.Result{}
	absent := map[string]map[string]string{}
	if !o.Tier.Includes(verify.TierFleet) || o.Local {
		return out, absent, nil
	}
	groups := map[*spec.Node][]target.Host{}
	var order []*spec.Node
	for _, t := range targets {
		if _, ok := groups[t.Node]; !ok {
			order = append(order, t.Node)
		}
		groups[t.Node] = append(groups[t.Node], t)
	}
	var isolations []groupIsolation
	for _, n := range order {
		exp := verify.ExpectationFor(n)
		exp.KB = o.KB
		for _, nt := range exp.NCCL {
			if !nt.MultiNode {
				continue
			}
			if out[n] == nil {
				out[n] = map[string]nccltest.Result{}
			}
			res, iso, missing := runGroup(ctx, o, groups[n], exp, nt)
			out[n][nt.Name] = res
			for host, why := range missing {
				if absent[host] == nil {
					absent[host] = map[string]string{}
				}
				absent[host][nt.Name] = why
			}
			if iso != nil {
				isolations = append(isolations, *iso)
			}
		}
	}
	return out, absent, isolations
}

// hostResults is the node group's multi-node results as one host is
// given them: a test the host did not take part in carries why (NotRun),
// so the host is judged "not run" instead of on other hosts' run.
func hostResults(group map[string]nccltest.Result, absent map[string]string) map[string]nccltest.Result {
	if len(absent) == 0 {
		return group
	}
	out := make(map[string]nccltest.Result, len(group))
	for name, res := range group {
		if why, ok := absent[name]; ok {
			res = nccltest.Result{Command: res.Command, NotRun: why}
		}
		out[name] = res
	}
	return out
}

// RefuseLocalNCCL refuses a target whose tier would run the spec's
// nccl_test commands on this machine — a sim:// or local:// host outside
// --local — unless o.Connect.AllowLocal: those commands are whatever the
// spec says, and the spec may come from someone else. The CLI refuses
// before anything runs; this keeps every other caller of Run as safe.
func RefuseLocalNCCL(tg target.Host, o Options) error {
	if o.Local || o.AllowLocal || !connect.RunsHere(tg.Host.Name) {
		return nil
	}
	p, err := verify.Plan(o.Tier, verify.ExpectationFor(tg.Node))
	if err != nil || len(p.NCCL) == 0 {
		return nil
	}
	return connect.LocalRefusal(tg.Host.Name, fmt.Sprintf("verify -tier %s would run the spec's nccl_test command %q on the machine gpuform runs on", o.Tier, p.NCCL[0].Command))
}

// withoutHost drops the host name a transport error starts with: the
// report already shows the error under its host.
func withoutHost(err error) error {
	var he *transport.HostError
	if errors.As(err, &he) {
		return errors.New(he.Detail())
	}
	return err
}
