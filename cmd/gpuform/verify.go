package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/provision/verify/runner"
	"github.com/gpuform/gpuform/spec"
)

type verifyFlags struct {
	targets  []string
	tier     string
	format   string
	out      string
	verbose  bool
	local    bool
	nccl     bool
	node     string
	mockNVML string
	// mockFaults are planted in the -mock-nvml system (tests).
	mockFaults []string
	// mockFaultsOnce are planted in the first run only: health mode's
	// confirming second run sees the system without them (tests).
	mockFaultsOnce []string
	// asJSON is -json, the same as -format json.
	asJSON bool
	// slurmDrain drains this node in Slurm on a failure and resumes a
	// drain of gpuform's on success (with --local).
	slurmDrain bool
	// processes judges the CPU and NIC binding of every GPU process.
	processes bool
}

func newVerifyCommand(s Streams) *cobra.Command {
	var flags specFlags
	var conn connectFlags
	var vf verifyFlags
	cmd := &cobra.Command{
		Use:         "verify [DIR]",
		Annotations: graceful(),
		Short:       "Prove the hosts are what the spec says and their GPUs work at full speed",
		Long: `Verify checks every host of the spec in DIR against what the spec implies:
GPU count and model, the pinned driver, persistence mode, ECC and its error
counters, row remapping, PCIe generation and width, NVLink state, NUMA node
of each GPU, the GPU-to-NIC path, temperatures and throttling, fabric
manager and nvidia-peermem, the binding file gpuform bind reads, and, from
the full tier on, nccl-tests floors. With -processes it also checks that
every process NVML reports on a GPU is bound to that GPU's NUMA node and
NIC (/proc/PID/status and environ).
The spec.* checks compare every resource of the spec with the host as plan
does (package versions, daemon.json, shm, limits, sysctls, kernel
arguments, governor, nccl.conf) and fail what drifted, and a reboot that
is pending. A tier whose tool (dcgmi, an nccl-tests binary) is missing
fails unless the spec lists it in verify { optional }; dcgmi is optional
by default where the spec installs no DCGM (no dcgm block), and the report
says so ("dcgm: optional, the spec installs no DCGM").

Each check is pass, fail, error (gpuform could not tell: a fact it could
not read, a tool that did not run), skip (does not apply to this node, or
optional) or not run (left to a deeper tier, or, where the tier needed
it, a run this host took no part in). Only pass is passed: a host passes
when nothing failed or errored and nothing its tier needed was not run.

NVML facts are read on the node by this same binary, copied over the SSH
connection when missing or different (checksum); where it cannot run, verify
falls back to nvidia-smi -q -x and says so.

Tiers, each with a hard time budget per host:
  probe   NVML and sysfs only, seconds; safe as Slurm's HealthCheckProgram
  quick   adds DCGM diagnostics level 1
  full    adds single-node nccl-tests
  fleet   adds multi-node nccl-tests (mpirun/srun commands)

Every failed check carries the remediation catalogue's meaning and action
(none, monitor, config, reset_gpu, reboot, inspect, rma); kernel.xid reads
the driver's Xids since boot from dmesg.

--local verifies this machine without SSH. With -slurm-drain it is fit for
Slurm's HealthCheckProgram (which ignores exit statuses): a failure that
takes the node out drains it (Reason="gpuform: health: <check>: <action>:
<message>"); a link or performance failure only when it fails again after
health { confirm_delay } (default 10s); a monitor-class Xid on its health {
drain_after }th sighting within drain_window (counted in
/var/lib/gpuform/health.json; an unusable state never stops a drain, exit
1). The circuit breaker keeps health mode's drains to health {
max_drained_share } (default 10%, rounded down) of the node block's hosts
(or health { fleet_partition }), even when all nodes check at once: a
node past it is not left drained (exit 1, "CIRCUIT BREAKER OPEN" on
stderr, a node Comment). When nothing calls for a drain it resumes the
node only when health mode drained it; apply's, an admin's and any other
drain are never touched.

Exit status: 0 every host passed; 2 a host did not (a check failed or
errored, or one its tier needed was not run; an unreachable host is a
failed check); 1 verify could not run (invalid spec, bad flag).`,
		Args: maxOneDir,
		RunE: jsonErrors(s, func() bool { return vf.format == "json" && vf.out == "" }, func(cmd *cobra.Command, args []string) error {
			dir := dirArg(args)
			if err := jsonAlias(cmd, vf.asJSON, &vf.format); err != nil {
				return err
			}
			tier, err := verify.ParseTier(vf.tier)
			if err != nil {
				return err
			}
			// Flags that only mean something with --local are refused
			// without it: a silently ignored -nccl would pass a run that
			// never started nccl-tests.
			if !vf.local {
				switch {
				case vf.nccl:
					return fmt.Errorf("-nccl works only with --local; to run nccl-tests on the spec's hosts use -tier full")
				case vf.node != "":
					return fmt.Errorf("-node works only with --local; to verify some hosts use -target")
				case vf.mockNVML != "":
					return fmt.Errorf("-mock-nvml works only with --local")
				case vf.slurmDrain:
					return fmt.Errorf("-slurm-drain works only with --local (it drains the node it runs on, as Slurm's HealthCheckProgram)")
				}
			}
			if (len(vf.mockFaults) > 0 || len(vf.mockFaultsOnce) > 0) && vf.mockNVML == "" {
				return fmt.Errorf("-mock-fault works only with -mock-nvml")
			}
			if vf.mockNVML != "" && !slices.Contains(nvmlMockNames(), vf.mockNVML) {
				return fmt.Errorf("-mock-nvml: unknown simulated system %q (known: %s)", vf.mockNVML, strings.Join(nvmlMockNames(), ", "))
			}
			if vf.local && vf.nccl && !tier.Includes(verify.TierFull) {
				tier = verify.TierFull
			}
			switch vf.format {
			case "text", "json", "junit", "prometheus":
			default:
				return fmt.Errorf("-format must be text, json, junit or prometheus, not %q", vf.format)
			}
			cfg, diags := flags.loadPinned(s, dir)
			if err := reportLoad(s, diags, cfg, vf.format == "json" && vf.out == ""); err != nil {
				return err
			}
			k, err := s.KB()
			if err != nil {
				return err
			}
			opts := runner.Options{Tier: tier, KB: k, AllowLocal: conn.allowLocal, Local: vf.local, Processes: vf.processes}
			if exe, err := os.Executable(); err == nil {
				opts.AgentBinary = exe
			}
			var targets []target.Host
			if vf.local {
				tg, err := localTarget(cfg, vf.node)
				if err != nil {
					return err
				}
				targets = []target.Host{tg}
			} else {
				if targets, err = selectHosts(s, cfg, dir, vf.targets, vf.format == "json" && vf.out == ""); err != nil {
					return err
				}
				// --local is the operator's own request to check this
				// machine; a local:// or sim:// host in a spec is not.
				if err := conn.refuseLocal(targets, "verify would run its checks on the machine gpuform runs on"); err != nil {
					return err
				}
				for _, tg := range targets {
					if err := runner.RefuseLocalNCCL(tg, opts); err != nil {
						return err
					}
				}
			}
			copts, err := conn.options(s, dir)
			if err != nil {
				return err
			}
			if vf.local {
				// --local is the operator's own request to check this
				// machine: its local:// host needs no -allow-local.
				copts.AllowLocal = true
				copts.MockNVML = vf.mockNVML
				copts.MockFaults = append(slices.Clone(vf.mockFaults), vf.mockFaultsOnce...)
			}
			show := vf.format == "text" && vf.out == "" && len(targets) > 1
			opts.Target = conn.targetOptionsFor(s, copts, show, "verifying")
			// Open the report file before the checks run: a full-tier run
			// takes minutes, and its report must not be lost to a typo.
			w := s.Out
			if vf.format == "prometheus" && vf.out != "" {
				// node_exporter's textfile collector may read the file at
				// any moment: it is written whole after the run, to a
				// temporary file in its directory renamed over it.
				if err := checkOutDir(vf.out); err != nil {
					return err
				}
			} else if vf.out != "" {
				f, err := os.Create(vf.out)
				if err != nil {
					return fmt.Errorf("-out: %w", err)
				}
				defer f.Close()
				w = f
			}
			opts.ValidFor = validFor(targets)
			started := time.Now()
			doc := runner.Run(cmd.Context(), targets, opts)

			if vf.format == "prometheus" {
				if err := writePrometheus(w, vf.out, doc, time.Since(started), k); err != nil {
					return err
				}
			} else if err := writeVerify(w, vf, doc, s.Color(w) && vf.out == ""); err != nil {
				return err
			}
			if vf.out != "" {
				notRun := ""
				if doc.Summary.NotRun > 0 {
					notRun = fmt.Sprintf(", %d not run", doc.Summary.NotRun)
				}
				fmt.Fprintf(s.Out, "Verify: %d host(s), %d failed; %d checks passed, %d failed, %d errors, %d skipped%s. Report written to %s.\n",
					doc.Summary.Hosts, doc.Summary.HostsFailed, doc.Summary.Passed, doc.Summary.Failed, doc.Summary.Errors, doc.Summary.Skipped, notRun, vf.out)
			}
			if vf.slurmDrain {
				// The report may be JSON on stdout: Slurm's part goes to
				// stderr then.
				sw := s.Out
				if vf.format != "text" && vf.out == "" {
					sw = s.Err
				}
				// Health mode's confirming run: the same checks again,
				// its progress and report not printed.
				rerun := func(ctx context.Context) *report.Document {
					ropts := opts
					rc := copts
					rc.MockFaults = vf.mockFaults
					ropts.Target = conn.targetOptionsFor(s, rc, false, "verifying")
					return runner.Run(ctx, targets, ropts)
				}
				if err := slurmHealth(cmd.Context(), s, sw, doc, targets[0].Node, rerun); err != nil {
					return err
				}
			}
			if !doc.OK() {
				return exitError{ExitReport}
			}
			return nil
		}),
	}
	flags.register(cmd.Flags())
	conn.register(cmd.Flags())
	cmd.Flags().StringArrayVar(&vf.targets, "target", nil, "only these hosts (repeatable; ranges allowed)")
	cmd.Flags().StringVar(&vf.tier, "tier", "probe", "probe, quick, full or fleet")
	cmd.Flags().StringVar(&vf.format, "format", "text", "text, json, junit or prometheus (node_exporter textfile collector)")
	cmd.Flags().BoolVar(&vf.asJSON, "json", false, "print the report as JSON (the same as -format json)")
	completeValues(cmd, "tier", tierNames()...)
	completeValues(cmd, "format", "text", "json", "junit", "prometheus")
	cmd.Flags().StringVar(&vf.out, "out", "", "write the report to FILE instead of standard output")
	cmd.Flags().BoolVar(&vf.verbose, "verbose", false, "list passed checks too")
	cmd.Flags().BoolVar(&vf.local, "local", false, "verify this machine, without SSH")
	cmd.Flags().BoolVar(&vf.nccl, "nccl", false, "with --local, also run the spec's nccl-tests (full tier)")
	cmd.Flags().StringVar(&vf.node, "node", "", "with --local, the node block this machine belongs to (default: the one listing this host name, or the only one)")
	cmd.Flags().StringVar(&vf.mockNVML, "mock-nvml", "", "with --local, answer NVML from a simulated system ("+strings.Join(nvmlMockNames(), ", ")+")")
	_ = cmd.Flags().MarkHidden("mock-nvml")
	cmd.Flags().BoolVar(&vf.processes, "processes", false, "also check every process running on a GPU: its allowed CPUs within the GPU's NUMA node, its NCCL_IB_HCA/UCX_NET_DEVICES naming the paired NIC")
	cmd.Flags().StringArrayVar(&vf.mockFaults, "mock-fault", nil, "with -mock-nvml, plant a fault in the simulated system (KIND:GPU or xid:GPU:XID, or KIND@PCI-ADDRESS to name the GPU by bus id; repeatable)")
	_ = cmd.Flags().MarkHidden("mock-fault")
	cmd.Flags().StringArrayVar(&vf.mockFaultsOnce, "mock-fault-once", nil, "with -mock-nvml, plant a fault in the first run only (health mode's confirming run sees none)")
	_ = cmd.Flags().MarkHidden("mock-fault-once")
	cmd.Flags().BoolVar(&vf.slurmDrain, "slurm-drain", false, "with --local, drain this node in Slurm when a check fails and resume it when gpuform drained it and every check passes (HealthCheckProgram mode; node name from SLURMD_NODENAME)")
	return cmd
}

func writeVerify(w io.Writer, vf verifyFlags, doc *report.Document, color bool) error {
	switch vf.format {
	case "json":
		return report.WriteJSON(w, doc)
	case "junit":
		return report.WriteJUnit(w, doc)
	}
	return report.WriteText(w, doc, report.TextOptions{Color: color, Verbose: vf.verbose})
}

// localTarget picks the node block this machine belongs to.
func localTarget(cfg *spec.Config, name string) (target.Host, error) {
	hostname, _ := os.Hostname()
	host := spec.Host{Name: "local://" + hostname}
	if name != "" {
		for _, n := range cfg.Nodes {
			if n.Name == name {
				return target.Host{Host: host, Node: n}, nil
			}
		}
		return target.Host{}, fmt.Errorf("--node %s: the spec has no node of that name", name)
	}
	for _, n := range cfg.Nodes {
		for _, h := range n.Hosts {
			if h.Name == hostname || strings.HasPrefix(h.Name, hostname+".") {
				return target.Host{Host: host, Node: n}, nil
			}
		}
	}
	if len(cfg.Nodes) == 1 {
		return target.Host{Host: host, Node: cfg.Nodes[0]}, nil
	}
	return target.Host{}, fmt.Errorf("no node of the spec lists this host (%s); name one with --node", hostname)
}

// validFor is how long the report stands: the shortest health { valid_for }
// of the verified hosts' nodes (the default where none sets it).
func validFor(targets []target.Host) time.Duration {
	var d time.Duration
	for _, t := range targets {
		if t.Node == nil {
			continue
		}
		_, _, _, v := t.Node.Health.Policy()
		if d == 0 || v < d {
			d = v
		}
	}
	return d
}
