package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/provision/verify/runner"
	"github.com/gpuform/gpuform/spec"
)

// verifyArguments are the arguments of gpuform verify.
type verifyArguments struct {
	// Dir is the spec directory, "." when omitted.
	Dir string
	// Spec are -var and -var-file.
	Spec specFlags
	// Conn are the connection flags.
	Conn connectFlags
	// Targets are the -target hosts; none means every host.
	Targets []string
	// Tier is -tier, raised to full by --local -nccl.
	Tier verify.Tier
	// Format is -format (text, json, junit, prometheus); -json sets json.
	Format string
	// OutPath is -out: the report's file, "" for standard output.
	OutPath string
	// Verbose lists passed checks too.
	Verbose bool
	// Local verifies this machine without SSH; NCCL, Node, MockNVML,
	// MockFaults, MockFaultsOnce and SlurmDrain work only with it.
	Local bool
	NCCL  bool
	Node  string
	// HostRoot is -host-root (with --local): where the node's root
	// filesystem is mounted in this machine (a pod's read-only hostPath
	// /): the probe reads the node's files there (runner.Options.HostRoot).
	HostRoot string
	// MockNVML answers NVML from a simulated system (tests).
	MockNVML string
	// MockFaults are planted in the -mock-nvml system (tests).
	MockFaults []string
	// MockFaultsOnce are planted in the first run only: health mode's
	// confirming second run sees the system without them (tests).
	MockFaultsOnce []string
	// SlurmDrain drains this node in Slurm on a failure and resumes a
	// drain of gpuform's on success (with --local).
	SlurmDrain bool
	// KubeTaint is health mode on Kubernetes (with --local): cordon and
	// taint this node (NODE_NAME) on a failure, lift gpuform's own on
	// success (kubehealth.go).
	KubeTaint bool
	// Kubeconfig is -kubeconfig (else KUBECONFIG, else the pod's
	// service account).
	Kubeconfig string
	// KubeNamespace is -namespace: the breaker Lease's namespace.
	KubeNamespace string
	// Processes judges the CPU and NIC binding of every GPU process.
	Processes bool
	// RequireBurnin fails a host without a valid burn-in record
	// (burnin.record: missing, failed, expired, other driver or GPUs).
	RequireBurnin bool
	// Engines are -engine and the slurm engine's flags
	// (verify_engine.go).
	Engines engineFlags

	// SlurmProlog gates a job's start as Slurm's Prolog= (with --local):
	// the quick tier; a node that fails is drained with the failed check
	// as the reason and the exit status is non-zero, so Slurm requeues
	// the job; silent when the node passes (slurmgate.go).
	SlurmProlog bool
	// SlurmEpilog is the gate after a job, as Slurm's Epilog= (with
	// --local): the probe tier, judging the Xids logged since the job
	// started.
	SlurmEpilog bool

	tier string
	// json is -json, the same as -format json.
	json bool
}

func (a *verifyArguments) register(fs *pflag.FlagSet) {
	a.Spec.register(fs)
	a.Conn.register(fs)
	fs.StringArrayVar(&a.Targets, "target", nil, "only these hosts (repeatable; ranges allowed)")
	fs.StringVar(&a.tier, "tier", "probe", "probe, quick, full, fleet or burnin")
	fs.StringVar(&a.Format, "format", "text", "text, json, junit or prometheus (node_exporter textfile collector)")
	fs.BoolVar(&a.json, "json", false, "print the report as JSON (the same as -format json)")
	fs.StringVar(&a.OutPath, "out", "", "write the report to FILE instead of standard output")
	fs.BoolVar(&a.Verbose, "verbose", false, "list passed checks too")
	fs.BoolVar(&a.Local, "local", false, "verify this machine, without SSH")
	fs.BoolVar(&a.NCCL, "nccl", false, "with --local, also run the spec's nccl-tests (full tier)")
	fs.StringVar(&a.Node, "node", "", "with --local, the node block this machine belongs to (default: the one listing this host name, or the only one)")
	fs.StringVar(&a.HostRoot, "host-root", "", "with --local, read this node's files (packages, /etc, image files) under DIR, where its / is mounted (a pod's read-only hostPath /), and ask its Docker or containerd through its socket there: the spec.* and container.* checks judge the node, not the container image; commands still run from this machine's own PATH, never from DIR")
	fs.StringVar(&a.MockNVML, "mock-nvml", "", "with --local, answer NVML from a simulated system ("+strings.Join(nvmlMockNames(), ", ")+")")
	_ = fs.MarkHidden("mock-nvml")
	fs.BoolVar(&a.Processes, "processes", false, "also check every process running on a GPU: its allowed CPUs within the GPU's NUMA node, its NCCL_IB_HCA/UCX_NET_DEVICES naming the paired NIC")
	fs.StringArrayVar(&a.MockFaults, "mock-fault", nil, "with -mock-nvml, plant a fault in the simulated system (KIND:GPU or xid:GPU:XID, or KIND@PCI-ADDRESS to name the GPU by bus id; repeatable)")
	_ = fs.MarkHidden("mock-fault")
	fs.StringArrayVar(&a.MockFaultsOnce, "mock-fault-once", nil, "with -mock-nvml, plant a fault in the first run only (health mode's confirming run sees none)")
	_ = fs.MarkHidden("mock-fault-once")
	fs.BoolVar(&a.RequireBurnin, "require-burnin", false, "fail a host whose burn-in record (/var/lib/gpuform/burnin.json) is missing, failed, older than verify { burnin { max_age } } (default 720h), or of another driver or other GPUs")
	a.Engines.register(fs)
	a.Engines.registerKube(fs)
	fs.BoolVar(&a.SlurmProlog, "slurm-prolog", false, "with --local, gate a job's start as Slurm's Prolog: the quick tier; when the node fails, drain it with the failed check as the reason and exit 2, so Slurm requeues the job; silent when it passes")
	fs.BoolVar(&a.SlurmEpilog, "slurm-epilog", false, "with --local, as Slurm's Epilog: the probe tier, judging the Xids logged since the job started; when the node fails, drain it with the reason and exit 2")
	fs.BoolVar(&a.KubeTaint, "kube-taint", false, "with --local, health mode on Kubernetes: cordon this node and add the gpuform.dev/unhealthy NoSchedule taint when a check fails, lift only gpuform's own when every check passes (node name from NODE_NAME; circuit breaker in the Lease gpuform-breaker)")
	fs.StringVar(&a.Kubeconfig, "kubeconfig", "", "with -kube-taint or -engine kubernetes, the kubeconfig file (default $KUBECONFIG, else the pod's service account)")
	fs.StringVar(&a.KubeNamespace, "namespace", "", "with -kube-taint, the namespace of the circuit breaker's Lease; with -engine kubernetes, of the run's Jobs (default gpuform-system)")
	fs.BoolVar(&a.SlurmDrain, "slurm-drain", false, "with --local, drain this node in Slurm when a check fails and resume it when gpuform drained it and every check passes (HealthCheckProgram mode; node name from SLURMD_NODENAME)")
}

// finish checks what the flags alone can tell, in the order verify has
// always reported it, and takes the positional arguments.
func (a *verifyArguments) finish(fs *pflag.FlagSet, args []string) error {
	a.Dir = dirArg(args)
	if err := jsonAliasOf(fs, a.json, &a.Format); err != nil {
		return err
	}
	tier, err := verify.ParseTier(a.tier)
	if err != nil {
		return err
	}
	// Flags that only mean something with --local are refused
	// without it: a silently ignored -nccl would pass a run that
	// never started nccl-tests.
	if !a.Local {
		switch {
		case a.NCCL:
			return fmt.Errorf("-nccl works only with --local; to run nccl-tests on the spec's hosts use -tier full")
		case a.Node != "":
			return fmt.Errorf("-node works only with --local; to verify some hosts use -target")
		case a.MockNVML != "":
			return fmt.Errorf("-mock-nvml works only with --local")
		case a.HostRoot != "":
			return fmt.Errorf("-host-root works only with --local (it is where the node's / is mounted in the pod that verifies it)")
		case a.SlurmDrain:
			return fmt.Errorf("-slurm-drain works only with --local (it drains the node it runs on, as Slurm's HealthCheckProgram)")
		case a.KubeTaint:
			return fmt.Errorf("-kube-taint works only with --local (it cordons and taints the node it runs on, as a DaemonSet's pod)")
		}
	}
	if a.KubeTaint && (a.SlurmDrain || a.SlurmProlog || a.SlurmEpilog) {
		return fmt.Errorf("-kube-taint and the Slurm modes (-slurm-drain, -slurm-prolog, -slurm-epilog) are different modes: give one")
	}
	if !a.KubeTaint && a.Engines.Engine != "kubernetes" && (fs.Changed("kubeconfig") || fs.Changed("namespace")) {
		return fmt.Errorf("-kubeconfig and -namespace work only with -kube-taint or -engine kubernetes")
	}
	if err := a.finishGate(fs, &tier); err != nil {
		return err
	}
	if (len(a.MockFaults) > 0 || len(a.MockFaultsOnce) > 0) && a.MockNVML == "" {
		return fmt.Errorf("-mock-fault works only with -mock-nvml")
	}
	if a.HostRoot != "" && !filepath.IsAbs(a.HostRoot) {
		return fmt.Errorf("-host-root %s: not an absolute path (where the node's / is mounted, e.g. /host)", a.HostRoot)
	}
	if a.MockNVML != "" && !slices.Contains(nvmlMockNames(), a.MockNVML) {
		return fmt.Errorf("-mock-nvml: unknown simulated system %q (known: %s)", a.MockNVML, strings.Join(nvmlMockNames(), ", "))
	}
	if err := a.Engines.finish(fs, a.Local); err != nil {
		return err
	}
	if e := a.Engines.Engine; tier == verify.TierBurnin && e != "ssh" {
		// The slurm and kubernetes engines size their jobs' time
		// limits from the tier's default budget, not the spec's
		// burn-in duration.
		return fmt.Errorf("-tier burnin works only with -engine ssh so far: -engine %s does not size its job for the spec's burn-in duration", e)
	}
	if e := a.Engines.Engine; a.RequireBurnin && e != "ssh" {
		// Refused, not ignored: the engines' bundle does not carry it
		// to the nodes, and a gate must not pass what it did not
		// check.
		return fmt.Errorf("-require-burnin works only with -engine ssh so far: -engine %s does not carry it to the nodes", e)
	}
	if a.Local && a.NCCL && !tier.Includes(verify.TierFull) {
		tier = verify.TierFull
	}
	a.Tier = tier
	switch a.Format {
	case "text", "json", "junit", "prometheus":
	default:
		return fmt.Errorf("-format must be text, json, junit or prometheus, not %q", a.Format)
	}
	return nil
}

// parseVerifyArguments parses gpuform verify's command line (after
// "verify").
func parseVerifyArguments(args []string) (*verifyArguments, error) {
	a := &verifyArguments{}
	return a, parseArguments(args, a.register, maxOneDir, a.finish)
}

func newVerifyCommand(s Streams) *cobra.Command {
	a := &verifyArguments{}
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
  burnin  adds the burn-in: DCGM level 3/4, a sustained load of verify {
          burnin { duration } } (default 4h) with temperatures, clocks and
          AER counters judged; writes /var/lib/gpuform/burnin.json

-require-burnin fails a host whose burn-in record is missing, failed,
older than verify { burnin { max_age } } (default 720h), dated in the
future, or of another driver or other GPUs (check burnin.record).

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

With -slurm-prolog it is Slurm's Prolog= (PrologFlags=Alloc), a gate before
each job: the quick tier; a node that passes prints nothing and makes no
Slurm call; one that fails is judged as health mode judges it, drained
with Reason="gpuform: health: prolog job <id>: <check>: …" behind the
circuit breaker and exits 2, so Slurm requeues the job. -slurm-epilog is
its Epilog=: the probe tier, judging the Xids logged since the job started.
Both fit into slurm.conf's PrologEpilogTimeout; a health check never lifts
their drains. Their exit status is the gate's: 0 the job may start, 2 the
node failed, 1 gpuform could not judge (Slurm then drains the node itself).

Exit status: 0 every host passed; 2 a host did not (a check failed or
errored, or one its tier needed was not run; an unreachable host is a
failed check); 1 verify could not run (invalid spec, bad flag).`,
		Args: maxOneDir,
		RunE: jsonErrors(s, func() bool { return a.Format == "json" && a.OutPath == "" }, func(cmd *cobra.Command, args []string) error {
			if err := a.finish(cmd.Flags(), args); err != nil {
				return err
			}
			v := newVerifyView(s, a.Format, a.OutPath, a.Verbose)
			defer v.Close()
			return runVerify(cmd.Context(), s, a, v)
		}),
	}
	a.register(cmd.Flags())
	completeValues(cmd, "tier", tierNames()...)
	completeValues(cmd, "format", "text", "json", "junit", "prometheus")
	return cmd
}

// runVerify is gpuform verify's work: it loads the spec, picks the hosts,
// runs the checks and, in health mode, acts on the report in Slurm. The
// report is the model; v renders it and everything shown on the way, and
// runVerify maps the report onto the exit code.
func runVerify(ctx context.Context, s Streams, a *verifyArguments, v *verifyView) error {
	if a.Engines.EngineNode != "" {
		return runEngineNode(ctx, s, a)
	}
	if a.Engines.EngineHold > 0 {
		return holdEngineNode(ctx, a.Engines.EngineHold)
	}
	var gate *gateRun
	if g := a.gate(); g != "" {
		// What slurmd gives a gate is checked before anything runs.
		var err error
		if gate, err = newGateRun(s, g, time.Now()); err != nil {
			return err
		}
	}
	cfg, diags := a.Spec.loadPinned(s, a.Dir)
	if err := v.Diagnostics(diags, cfg); err != nil {
		return err
	}
	k, err := s.KB()
	if err != nil {
		return err
	}
	opts := runner.Options{Tier: a.Tier, KB: k, AllowLocal: a.Conn.allowLocal, Local: a.Local, Processes: a.Processes, RequireBurnin: a.RequireBurnin}
	if opts.HostRoot, err = hostRoot(a.HostRoot); err != nil {
		return err
	}
	if exe, err := os.Executable(); err == nil {
		opts.AgentBinary = exe
	}
	var targets []target.Host
	if a.Local {
		tg, err := localTarget(cfg, a.Node)
		if err != nil {
			return err
		}
		targets = []target.Host{tg}
	} else {
		var err error
		if targets, err = selectHosts(cfg, a.Dir, a.Targets, v); err != nil {
			return err
		}
		// --local is the operator's own request to check this
		// machine; a local:// or sim:// host in a spec is not.
		if err := a.Conn.refuseLocal(targets, "verify would run its checks on the machine gpuform runs on"); err != nil {
			return err
		}
		for _, tg := range targets {
			if err := runner.RefuseLocalNCCL(tg, opts); err != nil {
				return err
			}
		}
	}
	copts, err := a.Conn.options(s, a.Dir)
	if err != nil {
		return err
	}
	if a.Local {
		// --local is the operator's own request to check this
		// machine: its local:// host needs no -allow-local.
		copts.AllowLocal = true
		copts.MockNVML = a.MockNVML
		copts.MockFaults = append(slices.Clone(a.MockFaults), a.MockFaultsOnce...)
	}
	show := v.ShowsProbeProgress() && len(targets) > 1
	opts.Target = a.Conn.targetOptionsFor(s, copts, show, "verifying")
	// Open the report file before the checks run: a full-tier run
	// takes minutes, and its report must not be lost to a typo.
	if err := v.Open(); err != nil {
		return err
	}
	opts.ValidFor = validFor(targets)
	if gate != nil {
		if err := gate.fit(ctx, s, &opts); err != nil {
			return err
		}
		return runGate(ctx, s, a, v, gate, targets, opts, copts)
	}
	eng, err := verifyEngine(s, a, cfg, v)
	if err != nil {
		return err
	}
	started := time.Now()
	doc, err := eng.Verify(ctx, targets, opts)
	if err != nil {
		return err
	}
	if err := v.Report(doc, time.Since(started)); err != nil {
		return err
	}
	// Health mode's confirming run: the same checks again, its progress
	// and report not printed.
	rerun := func(ctx context.Context) *report.Document {
		ropts := opts
		rc := copts
		rc.MockFaults = a.MockFaults
		ropts.Target = a.Conn.targetOptionsFor(s, rc, false, "verifying")
		return runner.Run(ctx, targets, ropts)
	}
	if a.SlurmDrain {
		if err := slurmHealth(ctx, s, v.Messages(), doc, targets[0].Node, rerun); err != nil {
			return err
		}
	}
	if a.KubeTaint {
		if err := kubeHealth(ctx, s, a, v.Messages(), doc, targets[0].Node, rerun); err != nil {
			return err
		}
	}
	if !doc.OK() {
		return exitError{ExitReport}
	}
	return nil
}

// verifyView renders verify's report in the -format asked for, to
// standard output or to the -out file (then with a summary line on
// standard output).
type verifyView struct {
	s       Streams
	format  string
	out     string
	verbose bool
	w       io.Writer
	file    *os.File
}

func newVerifyView(s Streams, format, out string, verbose bool) *verifyView {
	return &verifyView{s: s, format: format, out: out, verbose: verbose, w: s.Out}
}

// jsonOnStdout is whether standard output is one JSON document.
func (v *verifyView) jsonOnStdout() bool { return v.format == "json" && v.out == "" }

func (v *verifyView) Diagnostics(diags hcl.Diagnostics, cfg *spec.Config) error {
	return reportLoad(v.s, diags, cfg, v.jsonOnStdout())
}

// ShowsProbeProgress: only the text report on standard output has the
// progress of several hosts beside it.
func (v *verifyView) ShowsProbeProgress() bool { return v.format == "text" && v.out == "" }

// Open creates the -out file, or for prometheus checks its directory.
func (v *verifyView) Open() error {
	if v.format == "prometheus" && v.out != "" {
		// node_exporter's textfile collector may read the file at
		// any moment: it is written whole after the run, to a
		// temporary file in its directory renamed over it.
		return checkOutDir(v.out)
	}
	if v.out != "" {
		f, err := os.Create(v.out)
		if err != nil {
			return fmt.Errorf("-out: %w", err)
		}
		v.file, v.w = f, f
	}
	return nil
}

// Close closes the -out file.
func (v *verifyView) Close() {
	if v.file != nil {
		v.file.Close()
	}
}

// Report renders the report; took is how long the checks ran.
func (v *verifyView) Report(doc *report.Document, took time.Duration) error {
	var err error
	switch v.format {
	case "prometheus":
		var k *kb.KB
		if k, err = v.s.KB(); err == nil {
			err = writePrometheus(v.w, v.out, doc, took, k)
		}
	case "json":
		err = report.WriteJSON(v.w, doc)
	case "junit":
		err = report.WriteJUnit(v.w, doc)
	default:
		err = report.WriteText(v.w, doc, report.TextOptions{Color: v.s.Color(v.w) && v.out == "", Verbose: v.verbose})
	}
	if err != nil {
		return err
	}
	if v.out != "" {
		notRun := ""
		if doc.Summary.NotRun > 0 {
			notRun = fmt.Sprintf(", %d not run", doc.Summary.NotRun)
		}
		fmt.Fprintf(v.s.Out, "Verify: %d host(s), %d failed; %d checks passed, %d failed, %d errors, %d skipped%s. Report written to %s.\n",
			doc.Summary.Hosts, doc.Summary.HostsFailed, doc.Summary.Passed, doc.Summary.Failed, doc.Summary.Errors, doc.Summary.Skipped, notRun, v.out)
	}
	return nil
}

// Messages is where health mode's Slurm lines go: standard output, unless
// the report is a document for a program there.
func (v *verifyView) Messages() io.Writer {
	if v.format != "text" && v.out == "" {
		return v.s.Err
	}
	return v.s.Out
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

// hostRoot is -host-root as the probe takes it: "" for none (and for
// "/", the live system itself), else the clean path, which must be a
// directory: a mount that is missing fails the run, rather than every
// spec check failing on a node that reads as empty.
func hostRoot(dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	dir = filepath.Clean(dir)
	if dir == "/" {
		return "", nil
	}
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return "", fmt.Errorf("-host-root %s: no such directory: mount the node's / there (hostPath /, read-only)", dir)
	}
	return dir, nil
}
