package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/bench"
	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/engine"
	enginekube "github.com/gpuform/gpuform/provision/engine/kubernetes"
	engineslurm "github.com/gpuform/gpuform/provision/engine/slurm"
	enginessh "github.com/gpuform/gpuform/provision/engine/ssh"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/provision/verify/runner"
	"github.com/gpuform/gpuform/spec"
)

// engineFlags choose how verify reaches the spec's hosts (issue 33):
// -engine ssh (the default, one SSH connection per host from here),
// -engine slurm (salloc or a job's nodes, sbcast, one srun step) or
// -engine kubernetes (a Job per node, issue 39; its -kubeconfig and
// -namespace are verify's, shared with -kube-taint).
type engineFlags struct {
	// Engine is -engine: ssh, slurm or kubernetes.
	Engine string
	// Selector is -selector: with -engine kubernetes, only the nodes
	// this label selector matches.
	Selector string
	// KubeStartTimeout is -kube-start-timeout: how long a Job's pod may
	// take to start.
	KubeStartTimeout time.Duration
	// EngineKubeReport, with EngineNode, is the ConfigMap the node side
	// of -engine kubernetes writes its report to (hidden).
	EngineKubeReport string
	// EngineHold, with --local, is a launch worker of -engine
	// kubernetes (hidden): it holds its pod, and so the node's GPUs
	// the pod was given, for the duration or until its SIGTERM, while
	// a multi-node test runs from another node, and does nothing else.
	EngineHold time.Duration
	// SlurmJob is -slurm-job; "" is SLURM_JOB_ID when set, else a new
	// allocation.
	SlurmJob string
	// SlurmPartition is -slurm-partition, for the allocation.
	SlurmPartition string
	// SlurmStartTimeout is -slurm-start-timeout: how long the allocation
	// may wait to start.
	SlurmStartTimeout time.Duration
	// Deadline is -deadline: the whole run's limit; what did not finish
	// is not run.
	Deadline time.Duration
	// EngineNode is the hidden node side of -engine slurm: the bundle
	// sbcast put on this node (verify --local -engine-node FILE).
	EngineNode string
	// EngineCommand, with EngineNode, runs this multi-node test (or
	// isolation pair) command from this node instead of verifying it,
	// within EngineTimeout (hidden, the slurm engine's fleet tier).
	EngineCommand string
	EngineTimeout time.Duration
	// EngineNICs, with bench's EngineNode, lists this node's NICs for
	// the node-to-node pairs instead of benching it (hidden).
	EngineNICs bool
	// EnginePair, with bench's EngineNode, is a round of node-to-node
	// ib_write_bw runs (engineslurm.PairRound): this node runs its own
	// end of its run (hidden).
	EnginePair string
}

func (f *engineFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.Engine, "engine", engine.SSH, "how the hosts are reached: ssh (from this machine, one connection per host), slurm (the spec's hosts as Slurm nodes: sbcast, one srun step, verify --local on each) or kubernetes (a Job per node from verify { kubernetes { image } }, reports back in ConfigMaps)")
	fs.StringVar(&f.SlurmJob, "slurm-job", "", "with -engine slurm, verify only the nodes of this running job (default: SLURM_JOB_ID when set, else allocate the spec's hosts)")
	fs.StringVar(&f.SlurmPartition, "slurm-partition", "", "with -engine slurm, the partition to allocate the hosts in")
	fs.DurationVar(&f.SlurmStartTimeout, "slurm-start-timeout", engineslurm.DefaultStartTimeout, "with -engine slurm, how long the allocation may wait to start")
	fs.DurationVar(&f.Deadline, "deadline", 0, "with -engine slurm or kubernetes, end the whole run after D; what did not finish is reported not run (kubernetes: deleting the run's objects takes at most "+enginekube.CleanupGrace.String()+" more)")
	fs.StringVar(&f.EngineNode, "engine-node", "", "with --local, verify this node as the -engine slurm bundle FILE says (run by the slurm engine's srun step)")
	_ = fs.MarkHidden("engine-node")
	fs.StringVar(&f.EngineCommand, "engine-command", "", "with -engine-node, launch this multi-node nccl-tests command from this node and report its result")
	_ = fs.MarkHidden("engine-command")
	fs.DurationVar(&f.EngineTimeout, "engine-timeout", 0, "with -engine-command, its time limit")
	_ = fs.MarkHidden("engine-timeout")
	fs.BoolVar(&f.EngineNICs, "engine-nics", false, "with bench -engine-node, list this node's NICs for the node-to-node pairs")
	fs.StringVar(&f.EnginePair, "engine-pair", "", "with bench -engine-node, run this node's end of its node-to-node ib_write_bw run in this round")
	for _, name := range []string{"engine-nics", "engine-pair"} {
		_ = fs.MarkHidden(name)
	}
}

// registerKube adds -engine kubernetes's own flags (verify only; bench
// has no kubernetes engine yet).
func (f *engineFlags) registerKube(fs *pflag.FlagSet) {
	fs.StringVar(&f.Selector, "selector", "", "with -engine kubernetes, verify only the hosts on nodes this label selector matches (e.g. a training job's node pool)")
	fs.DurationVar(&f.KubeStartTimeout, "kube-start-timeout", enginekube.DefaultStartTimeout, "with -engine kubernetes, how long a node's Job may take to start its pod")
	fs.StringVar(&f.EngineKubeReport, "engine-kube-report", "", "with -engine-node, write the report to this ConfigMap (the node side of -engine kubernetes)")
	_ = fs.MarkHidden("engine-kube-report")
	fs.DurationVar(&f.EngineHold, "engine-hold", 0, "with --local, hold this pod (and its GPUs) for D or until SIGTERM: a worker of an -engine kubernetes launch")
	_ = fs.MarkHidden("engine-hold")
}

// finish checks what the engine flags alone can tell.
func (f *engineFlags) finish(fs *pflag.FlagSet, local bool) error {
	return f.finishFor(fs, local, local)
}

// finishFor is finish where nodeSide says whether -engine-node may be
// given (verify: with --local; bench: always, it has no --local).
func (f *engineFlags) finishFor(fs *pflag.FlagSet, local, nodeSide bool) error {
	if err := engine.Check(f.Engine); err != nil {
		return err
	}
	if f.Engine != engine.Slurm {
		for _, name := range []string{"slurm-job", "slurm-partition", "slurm-start-timeout"} {
			if fs.Changed(name) {
				return fmt.Errorf("-%s works only with -engine slurm", name)
			}
		}
	}
	if f.Engine != engine.Kubernetes {
		for _, name := range []string{"selector", "kube-start-timeout"} {
			if fs.Changed(name) {
				return fmt.Errorf("-%s works only with -engine kubernetes", name)
			}
		}
	}
	if f.Engine == engine.SSH && fs.Changed("deadline") {
		return fmt.Errorf("-deadline works only with -engine slurm or kubernetes")
	}
	if f.EngineKubeReport != "" && f.EngineNode == "" {
		return fmt.Errorf("-engine-kube-report works only with -engine-node")
	}
	if fs.Changed("engine-hold") && (!nodeSide || f.EngineNode != "" || f.EngineHold <= 0) {
		return fmt.Errorf("-engine-hold works only with --local, without -engine-node, and must be positive")
	}
	if local && f.Engine != engine.SSH {
		return fmt.Errorf("--local verifies this machine; -engine %s runs verify --local on every node itself", f.Engine)
	}
	if f.EngineNode != "" && !nodeSide {
		return fmt.Errorf("-engine-node works only with --local")
	}
	if f.Deadline < 0 || fs.Changed("slurm-start-timeout") && f.SlurmStartTimeout <= 0 || fs.Changed("kube-start-timeout") && f.KubeStartTimeout <= 0 {
		return fmt.Errorf("-deadline, -slurm-start-timeout and -kube-start-timeout must be positive")
	}
	return nil
}

// verifyEngine is the engine the arguments ask for.
func verifyEngine(s Streams, a *verifyArguments, cfg *spec.Config, v *verifyView) (engine.Engine, error) {
	if a.Engines.Engine == engine.Kubernetes {
		return kubeVerifyEngine(s, a, cfg, v)
	}
	if a.Engines.Engine != engine.Slurm {
		return enginessh.Engine{}, nil
	}
	o, err := slurmEngineOptions(s, a.Engines, v.Messages())
	if err != nil {
		return nil, err
	}
	o.Bundle = func(nodes map[string]engineslurm.BundleNode) (*engineslurm.Bundle, error) {
		return engineslurm.NewBundle(cfg, a.Dir, a.Spec.vars, a.Tier, a.Processes, nodes)
	}
	return engineslurm.New(o), nil
}

// slurmEngineOptions are the slurm engine's options from the engine
// flags that verify and bench share: the job (-slurm-job, else
// SLURM_JOB_ID), the partition, the start timeout, the deadline, and
// this binary, which the engine sends to the nodes.
func slurmEngineOptions(s Streams, f engineFlags, messages io.Writer) (engineslurm.Options, error) {
	exe, err := os.Executable()
	if err != nil {
		return engineslurm.Options{}, fmt.Errorf("-engine slurm sends this gpuform binary to the nodes, but cannot find it: %w", err)
	}
	job := f.SlurmJob
	if job == "" {
		job = s.Getenv("SLURM_JOB_ID")
	}
	o := engineslurm.Options{
		Job:          job,
		Partition:    f.SlurmPartition,
		StartTimeout: f.SlurmStartTimeout,
		Binary:       exe,
		Messages:     messages,
		// The command's environment (SLURM_CONF, GPUFORM_SIM_STATE)
		// reaches the Slurm clients and, through srun, the nodes.
		Env: s.Environ,
	}
	if f.Deadline > 0 {
		o.Deadline = time.Now().Add(f.Deadline)
	}
	return o, nil
}

// runEngineNode is the node side of -engine slurm: verify this node as
// the bundle says (the spec host and node block of SLURMD_NODENAME) and
// print its report in frames for the controller. What keeps the node
// from verifying is in the report, so the controller names it; the exit
// status is 0 whenever the report was written.
func runEngineNode(ctx context.Context, s Streams, a *verifyArguments) error {
	if a.Engines.EngineKubeReport != "" {
		return runKubeEngineNode(ctx, s, a)
	}
	node := slurmNodeName(s)
	rep := engineslurm.NodeReport{Node: node}
	hosts, res, err := verifyEngineNode(ctx, s, a, node)
	switch {
	case err != nil:
		rep.Error = err.Error()
	case res != nil:
		rep.NCCL = res
	default:
		rep = engineslurm.NewNodeReport(node, hosts)
	}
	return engineslurm.WriteNodeReport(s.Out, rep)
}

// verifyEngineNode verifies this node as the bundle says, or with
// -engine-command launches that command from it and returns its result.
func verifyEngineNode(ctx context.Context, s Streams, a *verifyArguments, node string) ([]report.Host, *nccltest.Result, error) {
	en, err := loadEngineNode(s, &a.Spec, &a.Conn, a.Engines.EngineNode, node)
	if err != nil {
		return nil, nil, err
	}
	defer en.cleanup()
	b, entry, tg, k, copts := en.bundle, en.entry, en.target, en.kb, en.copts
	a.Dir, a.Tier, a.Processes = en.dir, b.Tier, b.Processes
	opts := runner.Options{Tier: a.Tier, KB: k, AllowLocal: true, Local: true, Processes: a.Processes}
	if opts.HostRoot, err = hostRoot(a.HostRoot); err != nil {
		return nil, nil, err
	}
	if exe, err := os.Executable(); err == nil {
		opts.AgentBinary = exe
	}
	opts.Target = a.Conn.targetOptionsFor(s, copts, false, "verifying")
	opts.MultiNodeResults = b.MultiNode[entry.Host]
	if a.Engines.EngineCommand != "" {
		// The launch the SSH engine makes over its connection to the
		// group's first host, made here on the node itself.
		t, err := opts.Target.Connect(ctx, tg.Host)
		if err != nil {
			return nil, nil, err
		}
		defer t.Close()
		res, err := nccltest.RunTest(ctx, t, a.Engines.EngineCommand, a.Engines.EngineTimeout)
		if err != nil && res.Failure == "" {
			res.Failure = err.Error()
		}
		return nil, &res, nil
	}
	doc := runner.Run(ctx, []target.Host{tg}, opts)
	return doc.Hosts, nil, nil
}

// engineNode is what a node side of -engine slurm has loaded: the bundle,
// this node's entry, the spec from it and the target it verifies or
// benches as.
type engineNode struct {
	bundle  *engineslurm.Bundle
	entry   engineslurm.BundleNode
	dir     string
	target  target.Host
	kb      *kb.KB
	copts   connect.Options
	cleanup func()
}

// loadEngineNode reads the bundle sbcast put on this node, unpacks the
// spec into a private directory (removed by cleanup), loads it as the
// controller did and finds this node's target: its own local:// host, or
// the simulated host it stands for.
func loadEngineNode(s Streams, sf *specFlags, conn *connectFlags, path, node string) (*engineNode, error) {
	b, err := engineslurm.ReadBundle(path)
	if err != nil {
		return nil, err
	}
	entry, ok := b.Nodes[node]
	if !ok {
		return nil, fmt.Errorf("the bundle has no entry for node %s (the node the scheduler ran this on)", node)
	}
	dir, err := os.MkdirTemp("", "gpuform-spec")
	if err != nil {
		return nil, err
	}
	en := &engineNode{bundle: b, entry: entry, cleanup: func() { os.RemoveAll(dir) }}
	fail := func(err error) (*engineNode, error) { en.cleanup(); return nil, err }
	specDir, vars, err := b.Unpack(dir)
	if err != nil {
		return fail(err)
	}
	en.dir, sf.vars = specDir, vars
	cfg, diags := sf.loadPinned(s, specDir)
	if diags.HasErrors() {
		return fail(fmt.Errorf("the spec does not load on the node: %s", diags.Error()))
	}
	for _, n := range cfg.Nodes {
		if n.Name != entry.Node {
			continue
		}
		en.target = target.Host{Host: spec.Host{Name: "local://" + node}, Node: n}
		for _, h := range n.Hosts {
			if h.Name != entry.Host {
				continue
			}
			// The spec's host as this machine (its become setting
			// kept); a simulated host is verified as itself: its root
			// is the node's hardware (GPUFORM_SIM_STATE names where it
			// lives).
			en.target.Host = h
			if !connect.IsSim(h.Name) {
				en.target.Host.Name = "local://" + node
			}
		}
	}
	if en.target.Node == nil {
		return fail(fmt.Errorf("the spec has no node block %q", entry.Node))
	}
	if en.kb, err = s.KB(); err != nil {
		return fail(err)
	}
	if en.copts, err = conn.options(s, specDir); err != nil {
		return fail(err)
	}
	// The engine's own request to check this node, as --local is.
	en.copts.AllowLocal = true
	return en, nil
}

// slurmNodeName is the Slurm node this node side runs on.
func slurmNodeName(s Streams) string {
	if n := s.Getenv("SLURMD_NODENAME"); n != "" {
		return n
	}
	host, _ := os.Hostname()
	return host
}

// runBenchEngineNode is the node side of bench -engine slurm: bench this
// node as the bundle says and print the result in frames.
func runBenchEngineNode(ctx context.Context, s Streams, a *benchArguments) error {
	node := slurmNodeName(s)
	rep := engineslurm.NodeReport{Node: node}
	en, err := loadEngineNode(s, &a.Spec, &a.Conn, a.Engines.EngineNode, node)
	if err != nil {
		rep.Error = err.Error()
		return engineslurm.WriteNodeReport(s.Out, rep)
	}
	defer en.cleanup()
	o := bench.Options{Target: a.Conn.targetOptionsFor(s, en.copts, false, "benchmarking"), KB: en.kb, AllowLocal: true}
	if br := en.bundle.Bench; br != nil {
		o.Layers, o.Budget = br.Layers, br.Budget
		if g, ok := br.Groups[en.entry.Host]; ok {
			o.Group = &g
		}
		o.Remote = br.Remote[en.entry.Host]
	}
	switch {
	case a.Engines.EngineNICs:
		nics, _ := bench.NodeNICs(ctx, en.target, o)
		if nics == nil {
			nics = []bench.NIC{}
		}
		rep.NICs = &nics
	case a.Engines.EnginePair != "":
		end, err := benchPairEnd(ctx, a.Engines.EnginePair, node, en.target, o)
		if err != nil {
			end.Why = err.Error()
		}
		rep.Pair = &end
	default:
		r := bench.RunNode(ctx, en.target, o)
		rep.Bench = &r
	}
	return engineslurm.WriteNodeReport(s.Out, rep)
}

// benchPairEnd runs this node's end of its node-to-node run in the
// round (-engine-pair), as the SSH engine runs it over its connection.
func benchPairEnd(ctx context.Context, round, node string, tg target.Host, o bench.Options) (engineslurm.PairEnd, error) {
	ends, err := engineslurm.ParsePairRound(round)
	if err != nil {
		return engineslurm.PairEnd{}, err
	}
	e, ok := ends[node]
	if !ok {
		return engineslurm.PairEnd{}, fmt.Errorf("the round of pairs has no end for Slurm node %s", node)
	}
	t, err := o.Target.Connect(ctx, tg.Host)
	if err != nil {
		return engineslurm.PairEnd{}, err
	}
	defer t.Close()
	if e.Server == "" {
		why, err := bench.PairServer(ctx, t, e.NIC, e.Port)
		return engineslurm.PairEnd{Why: why}, err
	}
	gbps, why, err := bench.PairClient(ctx, t, e.NIC, e.Port, e.Server)
	return engineslurm.PairEnd{GBps: gbps, Why: why}, err
}

// benchEngine runs bench through Slurm (-engine slurm).
func benchEngine(ctx context.Context, s Streams, a *benchArguments, cfg *spec.Config, targets []target.Host, o bench.Options) (*bench.Report, error) {
	so, err := slurmEngineOptions(s, a.Engines, s.Err)
	if err != nil {
		return nil, err
	}
	so.Bundle = func(nodes map[string]engineslurm.BundleNode) (*engineslurm.Bundle, error) {
		return engineslurm.NewBundle(cfg, a.Dir, a.Spec.vars, "", false, nodes)
	}
	return engineslurm.New(so).Bench(ctx, targets, o)
}
