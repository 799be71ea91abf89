package drill

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/internal/cmdline"
	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/spec"
)

// TargetOptions are the drill's arguments that choose where the
// checkpoint-restore drill runs.
type TargetOptions struct {
	// Faults are the drills asked for by name (-fault); empty for all.
	Faults []string
	// OnRealHosts is -on-real-hosts: the spec's real hosts, not a
	// simulated node.
	OnRealHosts bool
	// AllowLocal is -allow-local: a command may run on the machine
	// gpuform runs on (a simulated node's, or a real host that is it).
	AllowLocal bool
}

// CheckpointTargets are the hosts the checkpoint-restore drill runs the
// spec's workload on: for each node block whose bench says how its
// workload resumes, a fresh simulated node of its first simulated host's
// profile, or with -on-real-hosts each of its real hosts. notRun names
// the node blocks left out, and why.
func CheckpointTargets(cfg *spec.Config, o TargetOptions) (targets []CheckpointTarget, notRun []string, err error) {
	if len(o.Faults) > 0 && !slices.Contains(o.Faults, CheckpointDrill) {
		return nil, nil, nil
	}
	for _, n := range cfg.Nodes {
		if n.Bench == nil || n.Bench.Checkpoint == nil || n.Bench.ThroughputRE == nil || n.Bench.Checkpoint.ResumedRE == nil {
			continue
		}
		tg := CheckpointTarget{Node: n.Name, Bench: n.Bench, GPUs: checkpointGPUs(n)}
		var real []spec.Host
		simulated := ""
		for _, h := range n.Hosts {
			if p, _, ok := sim.ParseHost(h.Name); ok {
				if simulated == "" {
					simulated = p
				}
				continue
			}
			real = append(real, h)
		}
		switch {
		case o.OnRealHosts:
			for _, h := range real {
				if connect.IsLocal(h.Name) && !o.AllowLocal {
					return nil, nil, connect.LocalRefusal(h.Name, fmt.Sprintf("the checkpoint drill would run and kill the spec's bench command %q on the machine gpuform runs on", n.Bench.Command.V))
				}
				tg.Host = h
				targets = append(targets, tg)
			}
			if simulated != "" {
				notRun = append(notRun, fmt.Sprintf("node %q: its simulated hosts (gpuform drill without -on-real-hosts runs it there)", n.Name))
			}
		case simulated != "":
			refused := ""
			for _, c := range []string{n.Bench.Command.V, n.Bench.Checkpoint.ResumeCommand.V} {
				if !simulatedWorkload(c) && !o.AllowLocal && refused == "" {
					refused = c
				}
			}
			if refused != "" {
				err := connect.LocalRefusal(sim.Scheme+simulated, fmt.Sprintf("the checkpoint drill would run the spec's command %q on the machine gpuform runs on (a simulated node runs its commands here; only %s, the simulated workload, runs without it)", refused, SimulatedWorkload))
				if slices.Contains(o.Faults, CheckpointDrill) {
					return nil, nil, err
				}
				// Asked for every drill: the catalogue still runs.
				notRun = append(notRun, fmt.Sprintf("node %q: %v", n.Name, err))
				continue
			}
			tg.Host = spec.Host{Name: sim.Scheme + simulated + "/drill-checkpoint-" + n.Name}
			tg.Profile = simulated
			targets = append(targets, tg)
			if len(real) > 0 {
				notRun = append(notRun, fmt.Sprintf("node %q: its real hosts (-on-real-hosts runs it there)", n.Name))
			}
		default:
			notRun = append(notRun, fmt.Sprintf("node %q: real hosts (-on-real-hosts runs it there)", n.Name))
		}
	}
	return targets, notRun, nil
}

// simulatedWorkload reports whether command runs the simulated node's
// training stand-in, which changes nothing outside the simulated root:
// the program is the stand-in, found on the node's PATH, with no
// variables set before it (PATH=… would find another).
func simulatedWorkload(command string) bool {
	words, err := cmdline.Split(strings.ReplaceAll(command, spec.BenchPlaceholder, "1"))
	if err != nil || len(words) == 0 {
		return false
	}
	env, argv := cmdline.SplitEnv(words)
	return len(env) == 0 && len(argv) > 0 && argv[0] == SimulatedWorkload
}

// checkpointGPUs is the {gpus} of the checkpoint drill: the checkpoint's
// gpus, else the largest of bench's, else the node's declared GPU count
// (hardware, else verify's nvml gpus), else 1.
func checkpointGPUs(n *spec.Node) int {
	b := n.Bench
	switch {
	case b.Checkpoint.GPUs.Set:
		return b.Checkpoint.GPUs.V
	case len(b.GPUs) > 0:
		m := 0
		for _, g := range b.GPUs {
			m = max(m, g.V)
		}
		return m
	case n.Hardware != nil && n.Hardware.GPUCount > 0:
		return n.Hardware.GPUCount
	case n.Verify != nil && n.Verify.NVML != nil && n.Verify.NVML.GPUs.Set:
		return n.Verify.NVML.GPUs.V
	}
	return 1
}
