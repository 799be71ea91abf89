package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpuform/gpuform/internal/cmdline"
	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/spec"
)

// DefaultBudget bounds one host's bench when neither the flag nor the
// spec's bench { timeout } says otherwise: nvbandwidth's host and peer
// matrices, four all_reduce sweeps and one 10 s ib_write_bw run per NIC
// take a few minutes on an 8-GPU node; a workload at four GPU counts
// takes what it takes, so the spec's timeout is the place to raise it.
const DefaultBudget = 20 * time.Minute

// Options say how to bench hosts.
type Options struct {
	// Target is how hosts are reached: Connect, Parallelism, Progress, as
	// for every command.
	Target target.Options
	// Layers are the layers to measure; empty means all.
	Layers []Layer
	// Budget is the hard limit per host; zero means the node's bench {
	// timeout }, else DefaultBudget.
	Budget time.Duration
	// KB is the knowledge base the expected bandwidths come from; a host
	// benched without one fails with an error.
	KB *kb.KB
	// AllowLocal lets a group's multi-node nccl_test (the spec's command)
	// run for sim:// and local:// hosts, which run it on this machine
	// (-allow-local).
	AllowLocal bool

	// What an engine other than SSH (provision/engine) replaces; nil or
	// zero for the SSH fan-out.

	// Launch, when set, runs a group's multi-node nccl_test command from
	// the node of host from, in place of connecting to it: the slurm
	// engine runs it as an srun step there.
	Launch func(ctx context.Context, from target.Host, command string, timeout time.Duration) (nccltest.Result, error)
	// LaunchNames names a group's hosts as its launcher (mpirun's -H,
	// srun's -w) knows them: the hosts' own names over SSH
	// (runner.LaunchNames), their Slurm node names in the slurm engine.
	// nil: the spec's host names.
	LaunchNames func(ctx context.Context, group []target.Host) map[string]string
	// Group, for RunNode, is the host's group's multi-node run, made by
	// the engine before the host's own bench (RunMultiNode); nil when
	// the host's group has none.
	Group *GroupRun
	// Remote, for RunNode, is the host's node-to-node NIC runs, made by
	// the engine before the host's own bench (NodeToNodeRounds); nil
	// when it has none.
	Remote map[string]RemoteNIC
}

// Run benches every target and returns the report; a host that cannot be
// reached or probed has Error set, the others carry on.
func Run(ctx context.Context, targets []target.Host, o Options) *Report {
	layers := o.Layers
	if len(layers) == 0 {
		layers = Layers()
	}
	multi := runMultiNode(ctx, targets, o)
	remote := map[string]map[string]RemoteNIC{}
	if slices.Contains(layers, LayerNetwork) {
		for _, g := range crossNodeGroups(ctx, targets, o) {
			runs, _ := crossPairs(g)
			for h, m := range runCrossNode(ctx, runs, sshPairRunner(o.Target.Connect)) {
				remote[h] = m
			}
		}
	}
	var mu sync.Mutex
	got := map[string]Host{}
	peers := map[string][]PeerValue{}
	errs := target.Each(ctx, targets, o.Target, func(ctx context.Context, tg target.Host) error {
		h, vals := benchOne(ctx, tg, o, layers, multi[tg.Node], remote[tg.Host.Name])
		mu.Lock()
		got[tg.Host.Name] = h
		peers[tg.Host.Name] = vals
		mu.Unlock()
		if h.Error != "" {
			return errors.New(h.Error)
		}
		if h.Bottleneck != nil {
			return fmt.Errorf("bottleneck: %s %s", h.Bottleneck.Layer, h.Bottleneck.Device)
		}
		return nil
	})
	return assemble(targets, layers, got, peers, errs)
}

// NodeResult is one host benched on its own node, as an engine's node
// side sends it back (provision/engine/slurm): the report's host and the
// per-device values it is compared with its peers on.
type NodeResult struct {
	Host  Host        `json:"host"`
	Peers []PeerValue `json:"peers,omitempty"`
}

// RunNode benches tg alone — the node side of an engine that benches
// every node at once: the group's multi-node run is the engine's
// (o.Group), and so are its node-to-node NIC runs (o.Remote; none: the
// network layer's NICs are measured within the node, as for a host
// without peers).
func RunNode(ctx context.Context, tg target.Host, o Options) NodeResult {
	layers := o.Layers
	if len(layers) == 0 {
		layers = Layers()
	}
	h, vals := benchOne(ctx, tg, o, layers, o.Group, o.Remote)
	return NodeResult{Host: h, Peers: vals}
}

// Merge is the report of hosts benched each on its own node (RunNode),
// as Run builds it: hosts in targets' order (a host with no result has
// Error set, with missing's reason when given), peers compared across
// the run.
func Merge(targets []target.Host, o Options, results map[string]NodeResult, missing map[string]error) *Report {
	layers := o.Layers
	if len(layers) == 0 {
		layers = Layers()
	}
	got := map[string]Host{}
	peers := map[string][]PeerValue{}
	for name, r := range results {
		got[name] = r.Host
		peers[name] = r.Peers
	}
	return assemble(targets, layers, got, peers, missing)
}

// benchOne benches one host within its budget; a host that cannot be
// reached or probed has Error set.
func benchOne(ctx context.Context, tg target.Host, o Options, layers []Layer, multi *GroupRun, remote map[string]RemoteNIC) (Host, []PeerValue) {
	kbase := o.KB
	start := time.Now()
	budget := o.Budget
	if budget == 0 && tg.Node != nil && tg.Node.Bench != nil && tg.Node.Bench.Timeout.Set {
		budget = tg.Node.Bench.Timeout.V
	}
	if budget == 0 {
		budget = DefaultBudget
	}
	hctx, cancel := transport.WithTimeout(ctx, budget, "bench of "+tg.Host.Name, "-budget or bench { timeout }")
	defer cancel()
	err := RefuseLocal(tg, o.AllowLocal)
	if err == nil && kbase == nil {
		err = errors.New("bench was given no knowledge base (a bug in gpuform)")
	}
	var h Host
	var vals []PeerValue
	if err == nil {
		h, vals, err = benchHost(hctx, kbase, o.Target.Connect, tg, layers, multi, remote)
	}
	if err != nil {
		msg := withoutHost(err)
		if errors.Is(hctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			msg = fmt.Sprintf("the budget of %s per host ran out before bench finished (raise it with -budget or bench { timeout })", budget)
		}
		h = Host{Host: tg.Host.Name, Error: msg}
	}
	h.DurationMS = time.Since(start).Milliseconds()
	return h, vals
}

// assemble puts the hosts' results in targets' order and compares peers.
func assemble(targets []target.Host, layers []Layer, got map[string]Host, peers map[string][]PeerValue, errs map[string]error) *Report {
	r := &Report{FormatVersion: jsonformat.Version, Layers: layers}
	seen := map[string]bool{}
	for _, tg := range targets {
		name := tg.Host.Name
		if seen[name] {
			continue
		}
		seen[name] = true
		h, ok := got[name]
		if !ok {
			msg := "not started"
			if err := errs[name]; err != nil {
				msg = err.Error()
			}
			h = Host{Host: name, Error: msg}
		}
		r.Hosts = append(r.Hosts, h)
	}
	// Peers are compared once every host is in: a GPU is slow only
	// against the others of its model, in its node and across the run.
	r.Outliers = peerOutliers(targets, peers)
	if r.Outliers == nil {
		r.Outliers = []Outlier{}
	}
	return r
}

// benchHost measures one host and judges it; the values are its
// per-device measurements for the comparison with its peers.
func benchHost(ctx context.Context, kb *kb.KB, connect target.Connector, tg target.Host, layers []Layer, multi *GroupRun, remote map[string]RemoteNIC) (Host, []PeerValue, error) {
	t, err := connect(ctx, tg.Host)
	if err != nil {
		return Host{}, nil, err
	}
	defer t.Close()
	node, err := target.ProbeOver(ctx, t, tg.Host)
	if err != nil {
		return Host{}, nil, err
	}
	info := NewHostInfo(kb, tg.Host.Name, node, tg.Node)
	if len(info.GPUs) == 0 {
		return Host{}, nil, fmt.Errorf("no NVIDIA GPU on the PCI bus: nothing to bench")
	}
	co := CollectOptions{Layers: layers}
	if tg.Node != nil {
		co.Bench = tg.Node.Bench
	}
	obs, err := Collect(ctx, t, info, co)
	if err != nil {
		return Host{}, nil, err
	}
	if slices.Contains(layers, LayerNetwork) {
		obs.Remote = remote
	}
	if multi != nil && slices.Contains(layers, LayerNetwork) {
		if multi.Why != "" {
			obs.Missing["multi_node"] = Missing{Tool: "nccl_test " + multi.Name, Reason: multi.Why}
		} else {
			obs.MultiNode = map[int]float64{multi.Nodes: multi.BusBW}
		}
	}
	return Judge(kb, info, obs, co.Bench, layers), peerValuesOf(info, obs, layers), nil
}

// GroupRun is a node group's multi-node all_reduce result: the group's
// point of the scaling curve, judged on each of its hosts.
type GroupRun struct {
	// Name is the nccl_test's name.
	Name string `json:"name"`
	// Nodes is the group's node count.
	Nodes int `json:"nodes"`
	// BusBW is the run's peak bus bandwidth (GB/s); 0 when Why says why
	// there is none.
	BusBW float64 `json:"busbw_gbps,omitempty"`
	// Why is why the run gave no figure.
	Why string `json:"why,omitempty"`
}

// RunMultiNode is, by spec host, the multi-node run of its group (as Run
// makes it before it benches the hosts): for an engine that benches each
// host on its node (RunNode, Options.Group).
func RunMultiNode(ctx context.Context, targets []target.Host, o Options) map[string]*GroupRun {
	groups := runMultiNode(ctx, targets, o)
	out := map[string]*GroupRun{}
	for _, tg := range targets {
		if g := groups[tg.Node]; g != nil {
			out[tg.Host.Name] = g
		}
	}
	return out
}

// DefaultGroupTimeout bounds a group's multi-node all_reduce whose
// nccl_test sets no timeout.
const DefaultGroupTimeout = 10 * time.Minute

// GroupTimeout is how long bench lets a group's multi-node test nt run:
// its timeout, else DefaultGroupTimeout.
func GroupTimeout(nt verify.NCCLExpectation) time.Duration {
	if nt.Timeout != 0 {
		return nt.Timeout
	}
	return DefaultGroupTimeout
}

// runMultiNode runs, for every node block with more than one host and a
// multi-node all_reduce nccl_test in its verify block (the mpirun or srun
// command the spec already gives verify's fleet tier), that command once
// from the block's first host: the group's point of the scaling curve.
func runMultiNode(ctx context.Context, targets []target.Host, o Options) map[*spec.Node]*GroupRun {
	out := map[*spec.Node]*GroupRun{}
	if len(o.Layers) > 0 && !slices.Contains(o.Layers, LayerNetwork) {
		return out
	}
	first := map[*spec.Node]target.Host{}
	groups := map[*spec.Node][]target.Host{}
	var order []*spec.Node
	for _, t := range targets {
		if t.Node == nil || len(t.Node.Hosts) < 2 {
			continue
		}
		if _, ok := first[t.Node]; !ok {
			first[t.Node] = t
			order = append(order, t.Node)
		}
		groups[t.Node] = append(groups[t.Node], t)
	}
	for _, n := range order {
		exp := verify.ExpectationFor(n)
		for _, nt := range exp.NCCL {
			if !nt.MultiNode || !strings.Contains(nt.Command, "all_reduce") {
				continue
			}
			g := &GroupRun{Name: nt.Name, Nodes: len(n.Hosts)}
			out[n] = g
			tg := first[n]
			if !o.AllowLocal && connect.RunsHere(tg.Host.Name) {
				g.Why = fmt.Sprintf("the group's nccl_test %q would run on the machine gpuform runs on (%s); allow it with -allow-local", nt.Name, tg.Host.Name)
				break
			}
			timeout := GroupTimeout(nt)
			cmd := groupCommand(ctx, nt.Command, groups[n], exp.GPUCount, o)
			var res nccltest.Result
			var err error
			if o.Launch != nil {
				res, err = o.Launch(ctx, tg, cmd, timeout)
			} else {
				t, cerr := o.Target.Connect(ctx, tg.Host)
				if cerr != nil {
					g.Why = fmt.Sprintf("cannot reach %s to launch it: %v", tg.Host.Name, cerr)
					break
				}
				res, err = nccltest.RunTest(ctx, t, cmd, timeout)
				t.Close()
			}
			switch v, ok := peakBusBW(res); {
			case err != nil:
				g.Why = err.Error()
			case !ok:
				g.Why = "no bus bandwidth: " + firstNonEmpty(res.Failure, "the output has no result rows")
			default:
				g.BusBW = v
			}
			break
		}
	}
	return out
}

// groupCommand is the group's multi-node command as verify's fleet tier
// runs it (provision/verify/runner): a command that names no hosts gets
// the group's, since without a host list mpirun starts every rank on the
// first host and srun anywhere in the allocation (the spec refuses a
// command that names hosts of its own).
func groupCommand(ctx context.Context, cmd string, group []target.Host, gpusPerNode int, o Options) string {
	if len(group) < 2 || cmdline.NamesHosts(cmd) {
		return cmd
	}
	launch := map[string]string{}
	if o.LaunchNames != nil {
		launch = o.LaunchNames(ctx, group)
	}
	names := make([]string, len(group))
	for i, h := range group {
		names[i] = h.Host.Name
		if n := launch[h.Host.Name]; n != "" {
			names[i] = n
		}
	}
	if c, err := cmdline.ForHosts(cmd, names, len(group), gpusPerNode); err == nil {
		return c
	}
	return cmd
}

// withoutHost drops the host name a transport error starts with: the
// report shows the error under its host already.
func withoutHost(err error) string {
	var he *transport.HostError
	if errors.As(err, &he) {
		return he.Detail()
	}
	return err.Error()
}

// RefuseLocal refuses a target whose bench would run the spec's workload
// command on this machine — a sim:// or local:// host — unless allowed
// (-allow-local): the command is whatever the spec says, and the spec may
// come from someone else. The CLI refuses before anything runs; Run
// refuses too, for its other callers.
func RefuseLocal(tg target.Host, allowLocal bool) error {
	if allowLocal || !connect.RunsHere(tg.Host.Name) || tg.Node == nil || tg.Node.Bench == nil || !tg.Node.Bench.Command.Set {
		return nil
	}
	return connect.LocalRefusal(tg.Host.Name, fmt.Sprintf("bench would run the spec's bench command %q on the machine gpuform runs on", tg.Node.Bench.Command.V))
}
