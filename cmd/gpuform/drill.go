package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/drill"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/provision/verify/runner"
	"github.com/gpuform/gpuform/spec"
)

// drillArguments are the arguments of gpuform drill.
type drillArguments struct {
	// Dir is the spec directory, "." when omitted.
	Dir string
	// Spec are -var and -var-file.
	Spec specFlags
	// Faults are -fault: the drills to run, none meaning all.
	Faults []string
	// Disabled are -disable-check: check ids whose failures are not
	// counted.
	Disabled []string
	// Format is -format (text, json).
	Format string
	// OnRealHosts is -on-real-hosts: run the drills safe on a real node
	// (the checkpoint-restore drill alone) on the spec's real hosts.
	OnRealHosts bool
	// Conn are the connection flags, for -on-real-hosts, and
	// -allow-local, which lets the checkpoint drill run a workload other
	// than the simulated one on a simulated node (on this machine).
	Conn connectFlags
	// Node is -node: the node block whose verify settings judge the
	// drills; "" is the first with a simulated HGX H100 host.
	Node string
	// List is -list: print the catalogue and exit.
	List bool
}

func (a *drillArguments) register(fs *pflag.FlagSet) {
	a.Spec.register(fs)
	fs.StringArrayVar(&a.Faults, "fault", nil, "run only the drill `NAME` (repeatable; -list shows them)")
	fs.StringArrayVar(&a.Disabled, "disable-check", nil, "do not count failures of the verify check `ID` (nvml.pcie_link): what else catches its faults")
	fs.StringVar(&a.Format, "format", "text", "output format: text or json")
	fs.BoolVar(&a.OnRealHosts, "on-real-hosts", false, "run the drills safe and reversible on a real node on the spec's real hosts: checkpoint-restore alone, which kills and resumes the spec's own declared workload")
	fs.StringVar(&a.Node, "node", "", "the node block whose verify settings judge the single-node drills (the slow-node drill uses the first of several hosts with an nccl_test)")
	fs.BoolVar(&a.List, "list", false, "list the drills and exit")
	a.Conn.register(fs)
}

func (a *drillArguments) finish(_ *pflag.FlagSet, args []string) error {
	if a.Format != "text" && a.Format != "json" {
		return fmt.Errorf("-format must be text or json, not %q", a.Format)
	}
	for _, id := range a.Disabled {
		if !slices.ContainsFunc(verify.Checks(), func(d verify.CheckDef) bool { return string(d.ID) == id }) {
			return fmt.Errorf("-disable-check %q: not a verify check id", id)
		}
	}
	a.Dir = dirArg(args)
	return nil
}

func newDrillCommand(s Streams) *cobra.Command {
	a := &drillArguments{}
	cmd := &cobra.Command{
		Use:   "drill [DIR]",
		Short: "Inject faults into simulated nodes and show what catches each",
		Long: `Drill proves the gate catches what it is for. For each fault of its
catalogue (a GPU off the bus with Xid 79, an NVLink down, a rail NIC down
or trained low, a PCIe link downgraded, a row remap pending, a thermal
slowdown, the fabric manager stopped, a half driver upgrade, /dev/shm too
small, a slow node in a multi-node group) it makes a fresh simulated HGX H100 node, injects the fault on
every layer it shows on (sysfs, NVML, nvidia-smi, the kernel log, the
bench replays, the node's files), runs verify with the settings of the
spec's node block, and reports the check that caught it, the remedy,
what health mode would do (drain, with its Slurm reason) and how long
verify took to tell. A healthy node is verified alongside: a check that
fails on it too tells no fault and is not counted.

The slow node is verified with two healthy peers as one node group at
the fleet tier, with the settings of the spec's first node block of
several hosts with an nccl_test: the group's run, then pairwise
isolation, which names the slow node. A check that fails on a healthy
peer too (the group's run) tells the group, not the node, and is not
counted.

Where a node block's bench gives a workload and says how it resumes
(bench { command, throughput, checkpoint { resume_command, resumed } }),
the checkpoint-restore drill starts the workload, kills it with SIGKILL
after kill_after as a node loss would, runs the resume command, and
passes when the resumed run says it resumed from a step above 0 and its
throughput is within max_throughput_loss of before the kill. It runs on
a fresh simulated node for a node block of simulated hosts; the spec's
workload runs there on this machine, so a command other than the
simulated workload, gpuform-sim-train, needs -allow-local.

The drill's nodes live in a temporary directory and are removed after;
the spec's own simulated nodes are not touched. -on-real-hosts runs the
one drill safe on a real node, checkpoint-restore, on the real hosts of
the node blocks with a checkpoint block: it kills the spec's declared
workload, which the spec says how to resume. The fault catalogue is
simulated only.

Exit status: 0 every fault caught, 2 a fault not caught (or not run),
1 invalid spec or bad flag.`,
		Args: maxOneDir,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.finish(cmd.Flags(), args); err != nil {
				return err
			}
			return runDrill(cmd.Context(), s, a)
		},
	}
	a.register(cmd.Flags())
	return cmd
}

// safeOnRealHosts are the drills that may run on a real node: reversible
// and safe. The checkpoint drill kills the spec's own declared workload,
// which the spec says how to resume; every fault of the catalogue
// rewrites a simulated root.
var safeOnRealHosts = []string{drill.CheckpointDrill}

func runDrill(ctx context.Context, s Streams, a *drillArguments) error {
	faults, err := drill.Select(a.Faults)
	if err != nil {
		return err
	}
	checkpoint := len(a.Faults) == 0 || slices.Contains(a.Faults, drill.CheckpointDrill)
	if a.List {
		for _, f := range faults {
			fmt.Fprintf(s.Out, "%-24s %s\n", f.Name, f.Summary)
		}
		if checkpoint {
			fmt.Fprintf(s.Out, "%-24s %s\n", drill.CheckpointDrill, drill.CheckpointSummary)
		}
		return nil
	}
	if a.OnRealHosts {
		if len(a.Faults) > 0 && len(faults) > 0 {
			var names []string
			for _, f := range faults {
				names = append(names, f.Name)
			}
			return fmt.Errorf("-on-real-hosts: %s not safe on a real node: of %d drills only %s is (it kills and resumes the spec's own declared workload); every other drill injects its fault by rewriting a simulated node's root",
				strings.Join(names, ", ")+map[bool]string{true: " is", false: " are"}[len(names) == 1], len(drill.Catalogue())+1, strings.Join(safeOnRealHosts, ", "))
		}
		faults = nil
	}
	cfg, diags := a.Spec.loadPinned(s, a.Dir)
	if err := reportLoad(s, diags, cfg, a.Format == "json"); err != nil {
		return err
	}
	targets, notRun, err := drill.CheckpointTargets(cfg, drill.TargetOptions{Faults: a.Faults, OnRealHosts: a.OnRealHosts, AllowLocal: a.Conn.allowLocal})
	if err != nil {
		return err
	}
	if len(targets) == 0 && (slices.Contains(a.Faults, drill.CheckpointDrill) || a.OnRealHosts) {
		where := "simulated hosts"
		if a.OnRealHosts {
			where = "real hosts"
		}
		return fmt.Errorf("%s: no node block of %s has a workload that says how it resumes (bench { command, throughput, checkpoint { resume_command, resumed } }); see docs/guide/drills.md#checkpoint-restore-drill", drill.CheckpointDrill, where)
	}
	state, err := os.MkdirTemp("", "gpuform-drill-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	opts := drill.Options{Faults: faults, StateDir: state, Checkpoints: targets, Parallelism: a.Conn.parallelism}
	if len(targets) > 0 {
		copts, err := a.Conn.options(s, a.Dir)
		if err != nil {
			return err
		}
		opts.Open = func(ctx context.Context, tg drill.CheckpointTarget, stateDir string) (transport.Transport, error) {
			o := copts
			o.SimStateDir = stateDir
			return a.Conn.targetOptionsFor(s, o, false, "drilling").Connect(ctx, tg.Host)
		}
	}
	if len(faults) > 0 {
		if err := faultOptions(s, a, cfg, &opts); err != nil {
			return err
		}
	}
	rep, err := drill.Run(ctx, opts)
	if err != nil {
		return err
	}
	rep.CheckpointsNotRun = notRun
	if a.Format == "json" {
		err = rep.WriteJSON(s.Out)
	} else {
		err = rep.WriteHuman(s.Out)
	}
	if err != nil {
		return err
	}
	if !rep.OK() {
		return exitError{ExitReport}
	}
	return nil
}

// faultOptions fills in what the fault catalogue's drills need: the node
// block that judges them, health mode's policy, verify on one simulated
// node and on a node group, and the spec's alerts.
func faultOptions(s Streams, a *drillArguments, cfg *spec.Config, opts *drill.Options) error {
	node, err := drillNode(cfg, a.Node)
	if err != nil {
		return err
	}
	k, err := s.KB()
	if err != nil {
		return err
	}
	policy, err := healthPolicy(s, node)
	if err != nil {
		return err
	}
	conn := connectFlags{parallelism: 1}
	verifyNode := func(ctx context.Context, host, stateDir string) (*report.Document, error) {
		opts := runner.Options{Tier: verify.TierProbe, KB: k}
		opts.Target = conn.targetOptionsFor(s, connect.Options{SimStateDir: stateDir, SpecDir: a.Dir, Getenv: s.Getenv}, false, "drilling")
		if exe, err := os.Executable(); err == nil {
			opts.AgentBinary = exe
		}
		tg := target.Host{Host: spec.Host{Name: host}, Node: node}
		return runner.Run(ctx, []target.Host{tg}, opts), nil
	}
	// The drill's group is its own simulated nodes, all on this
	// machine: the group's test may run here (what -allow-local grants
	// verify), and never on the spec's hosts.
	var verifyGroup drill.GroupVerifyFunc
	if group := drillGroupNode(cfg); group != nil {
		verifyGroup = func(ctx context.Context, hosts []string, stateDir string) (*report.Document, error) {
			opts := runner.Options{Tier: verify.TierFleet, KB: k, AllowLocal: true}
			copts := connect.Options{SimStateDir: stateDir, SpecDir: a.Dir, Getenv: s.Getenv}
			// The group's nodes are probed at once, as verify does.
			groupConn := connectFlags{parallelism: len(hosts)}
			opts.Target = groupConn.targetOptionsFor(s, copts, false, "drilling")
			if exe, err := os.Executable(); err == nil {
				opts.AgentBinary = exe
			}
			var tgs []target.Host
			for _, h := range hosts {
				tgs = append(tgs, target.Host{Host: spec.Host{Name: h}, Node: group})
			}
			return runner.Run(ctx, tgs, opts), nil
		}
	}
	// The alert rules' tests are written under the drill's state
	// directory, removed with it.
	promDir := filepath.Join(opts.StateDir, "alerts")
	if err := os.Mkdir(promDir, 0o700); err != nil {
		return err
	}
	opts.Alerts, opts.AlertsBy = drill.PromtoolAlerts(cfg, node, promDir)
	opts.Verify, opts.VerifyGroup, opts.Policy, opts.Disabled = verifyNode, verifyGroup, policy, a.Disabled
	return nil
}

// drillGroupNode is the node block whose verify settings judge the
// drills of a node group: the first of several hosts with an nccl_test
// (verify -tier fleet runs it on the group's hosts, then pairwise
// isolation); nil when none.
func drillGroupNode(cfg *spec.Config) *spec.Node {
	for _, n := range cfg.Nodes {
		if len(n.Hosts) > 1 && n.Verify != nil && len(n.Verify.NCCLTests) > 0 {
			return n
		}
	}
	return nil
}

// drillNode is the node block whose verify settings judge the drills:
// the one named, else the first with a simulated HGX H100 host (the
// hardware the catalogue's addresses are of).
func drillNode(cfg *spec.Config, name string) (*spec.Node, error) {
	for _, n := range cfg.Nodes {
		if name != "" {
			if n.Name == name {
				return n, nil
			}
			continue
		}
		for _, h := range n.Hosts {
			if p, _, ok := sim.ParseHost(h.Name); ok && strings.HasPrefix(p, "hgx-h100") {
				return n, nil
			}
		}
	}
	if name != "" {
		return nil, fmt.Errorf("-node %q: no such node block", name)
	}
	return nil, errors.New("the drill judges its faults by a node block of simulated HGX H100 hosts (sim://hgx-h100-…), and the spec has none: name one with -node, or see examples/drill")
}
