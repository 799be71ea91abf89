package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/engine"
	engineslurm "github.com/gpuform/gpuform/provision/engine/slurm"
	enginessh "github.com/gpuform/gpuform/provision/engine/ssh"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/provision/verify/runner"
	"github.com/gpuform/gpuform/spec"
)

// engineFlags choose how verify reaches the spec's hosts (issue 33):
// -engine ssh (the default, one SSH connection per host from here) or
// -engine slurm (salloc or a job's nodes, sbcast, one srun step).
type engineFlags struct {
	// Engine is -engine: ssh or slurm.
	Engine string
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
}

func (f *engineFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.Engine, "engine", engine.SSH, "how the hosts are reached: ssh (from this machine, one connection per host) or slurm (the spec's hosts as Slurm nodes: sbcast, one srun step, verify --local on each)")
	fs.StringVar(&f.SlurmJob, "slurm-job", "", "with -engine slurm, verify only the nodes of this running job (default: SLURM_JOB_ID when set, else allocate the spec's hosts)")
	fs.StringVar(&f.SlurmPartition, "slurm-partition", "", "with -engine slurm, the partition to allocate the hosts in")
	fs.DurationVar(&f.SlurmStartTimeout, "slurm-start-timeout", engineslurm.DefaultStartTimeout, "with -engine slurm, how long the allocation may wait to start")
	fs.DurationVar(&f.Deadline, "deadline", 0, "with -engine slurm, end the whole run after D; what did not finish is reported not run")
	fs.StringVar(&f.EngineNode, "engine-node", "", "with --local, verify this node as the -engine slurm bundle FILE says (run by the slurm engine's srun step)")
	_ = fs.MarkHidden("engine-node")
	fs.StringVar(&f.EngineCommand, "engine-command", "", "with -engine-node, launch this multi-node nccl-tests command from this node and report its result")
	_ = fs.MarkHidden("engine-command")
	fs.DurationVar(&f.EngineTimeout, "engine-timeout", 0, "with -engine-command, its time limit")
	_ = fs.MarkHidden("engine-timeout")
}

// finish checks what the engine flags alone can tell.
func (f *engineFlags) finish(fs *pflag.FlagSet, local bool) error {
	if err := engine.Check(f.Engine); err != nil {
		return err
	}
	if f.Engine != engine.Slurm {
		for _, name := range []string{"slurm-job", "slurm-partition", "slurm-start-timeout", "deadline"} {
			if fs.Changed(name) {
				return fmt.Errorf("-%s works only with -engine slurm", name)
			}
		}
	}
	if local && f.Engine != engine.SSH {
		return fmt.Errorf("--local verifies this machine; -engine %s runs verify --local on every node itself", f.Engine)
	}
	if f.EngineNode != "" && !local {
		return fmt.Errorf("-engine-node works only with --local")
	}
	if f.Deadline < 0 || fs.Changed("slurm-start-timeout") && f.SlurmStartTimeout <= 0 {
		return fmt.Errorf("-deadline and -slurm-start-timeout must be positive")
	}
	return nil
}

// verifyEngine is the engine the arguments ask for.
func verifyEngine(s Streams, a *verifyArguments, cfg *spec.Config, v *verifyView) (engine.Engine, error) {
	if a.Engines.Engine != engine.Slurm {
		return enginessh.Engine{}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("-engine slurm sends this gpuform binary to the nodes, but cannot find it: %w", err)
	}
	job := a.Engines.SlurmJob
	if job == "" {
		job = s.Getenv("SLURM_JOB_ID")
	}
	o := engineslurm.Options{
		Job:          job,
		Partition:    a.Engines.SlurmPartition,
		StartTimeout: a.Engines.SlurmStartTimeout,
		Binary:       exe,
		Messages:     v.Messages(),
		Bundle: func(nodes map[string]engineslurm.BundleNode) (*engineslurm.Bundle, error) {
			return engineslurm.NewBundle(cfg, a.Dir, a.Spec.vars, a.Tier, a.Processes, nodes)
		},
	}
	if a.Engines.Deadline > 0 {
		o.Deadline = time.Now().Add(a.Engines.Deadline)
	}
	return engineslurm.New(o), nil
}

// runEngineNode is the node side of -engine slurm: verify this node as
// the bundle says (the spec host and node block of SLURMD_NODENAME) and
// print its report in frames for the controller. What keeps the node
// from verifying is in the report, so the controller names it; the exit
// status is 0 whenever the report was written.
func runEngineNode(ctx context.Context, s Streams, a *verifyArguments) error {
	node := s.Getenv("SLURMD_NODENAME")
	if node == "" {
		host, _ := os.Hostname()
		node = host
	}
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
	b, err := engineslurm.ReadBundle(a.Engines.EngineNode)
	if err != nil {
		return nil, nil, err
	}
	entry, ok := b.Nodes[node]
	if !ok {
		return nil, nil, fmt.Errorf("the bundle has no entry for Slurm node %s", node)
	}
	dir, err := os.MkdirTemp("", "gpuform-spec")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	specDir, vars, err := b.Unpack(dir)
	if err != nil {
		return nil, nil, err
	}
	a.Dir, a.Spec.vars, a.Tier, a.Processes = specDir, vars, b.Tier, b.Processes
	cfg, diags := a.Spec.loadPinned(s, a.Dir)
	if diags.HasErrors() {
		return nil, nil, fmt.Errorf("the spec does not load on the node: %s", diags.Error())
	}
	var tg target.Host
	for _, n := range cfg.Nodes {
		if n.Name != entry.Node {
			continue
		}
		tg = target.Host{Host: spec.Host{Name: "local://" + node}, Node: n}
		for _, h := range n.Hosts {
			// A simulated host is verified as itself: its root is the
			// node's hardware (GPUFORM_SIM_STATE names where it lives).
			if h.Name == entry.Host && connect.IsSim(h.Name) {
				tg.Host = h
			}
		}
	}
	if tg.Node == nil {
		return nil, nil, fmt.Errorf("the spec has no node block %q", entry.Node)
	}
	k, err := s.KB()
	if err != nil {
		return nil, nil, err
	}
	copts, err := a.Conn.options(s, a.Dir)
	if err != nil {
		return nil, nil, err
	}
	copts.AllowLocal = true
	opts := runner.Options{Tier: a.Tier, KB: k, AllowLocal: true, Local: true, Processes: a.Processes}
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
