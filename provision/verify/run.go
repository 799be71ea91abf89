package verify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify/dcgm"
	"github.com/gpuform/gpuform/provision/verify/kmsg"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// HostOptions say how RunHost gathers a host's facts.
type HostOptions struct {
	// Fetch says how NVML facts are read (agent binary, its arguments).
	Fetch FetchOptions
	// Node is the facts probe's result for the host, for fabric manager
	// and peermem state; nil leaves those checks unjudged (error).
	Node *facts.Node
	// Report, when set, is used instead of fetching NVML facts over the
	// transport: sim nodes and `verify --local --mock-nvml` collect in
	// process with nvmlfacts.CollectAgent.
	Report *nvmlfacts.Report
	// NCCL holds results of runs made elsewhere: a multi-node test is run
	// once per host group (nccltest.RunTest from one host, through mpirun)
	// and its result given to every host of the group. RunHost never runs
	// a MultiNode test itself.
	NCCL map[string]nccltest.Result
	// NVMLError, when set with no Report, says why NVML facts cannot be
	// had on this host (a simulated node without a driver); nothing is
	// fetched and nvml.facts fails with this reason.
	NVMLError string
	// Gathered, when set, receives the facts the checks judged (the NVML
	// report and the nccl-tests results) for outputs that show them, such
	// as the Prometheus metrics.
	Gathered *Gathered
	// Become runs the commands that read root's files (the image files'
	// hashes) with the host's become method.
	Become bool
	// HostRoot is where the node's root filesystem is mounted on the
	// machine the checks run on (verify --local -host-root, a pod's
	// read-only hostPath /), "" for none: the image files' hashes read
	// the node's files there, never the pod's own.
	HostRoot string
	// KernelSince, when set, judges only the kernel log's events from
	// then on (kmsg.Log.From): an epilog gate's job start. Zero judges
	// the log since boot.
	KernelSince time.Time
}

// Gathered is what RunHost read from a host besides the checks' verdicts.
type Gathered struct {
	// NVML is the NVML report as the checks judged it: each GPU under
	// the spec's index of the GPU at its PCI bus id (NVML's own where the
	// spec gives no bus ids; GPURef.NVMLIndex in the checks keeps NVML's);
	// nil when none could be read.
	NVML *nvmlfacts.Report
	// NCCL holds the nccl-tests results by test name.
	NCCL map[string]nccltest.Result
	// Kernel is the kernel log's Xid and SXid lines; nil when not read.
	Kernel *kmsg.Log
	// NICs are the host's RDMA ports, the judged rails and the others;
	// nil without probe facts.
	NICs []NICPort
	// Firmware is the host's NIC firmware and BIOS version, nil without
	// probe facts (firmware.domain_drift compares them).
	Firmware *Firmware
}

// RunHost verifies one host at a tier within the tier's hard budget: NVML
// facts (agent, else nvidia-smi), DCGM diagnostics from the quick tier on,
// the single-node nccl-tests of the tier (multi-node results come in
// through opts.NCCL), then Check. Anything that fails to run
// becomes a failed or errored check, never a Go error: a broken host must
// still produce its report.
func RunHost(ctx context.Context, t transport.Transport, exp Expectation, tier Tier, opts HostOptions) ([]CheckResult, error) {
	plan, err := Plan(tier, exp)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, plan.Budget)
	defer cancel()

	extra := HostFactsFromNode(opts.Node)
	extra.Tier = tier
	fetch := opts.Fetch
	if fetch.Agent.Collect.XIDWindow == 0 {
		fetch.Agent.Collect.XIDWindow = plan.XIDWindow
	}
	rep := opts.Report
	if rep == nil && opts.NVMLError != "" {
		extra.NVMLError = opts.NVMLError
	} else if rep == nil {
		var err error
		if rep, err = FetchNVML(ctx, t, fetch); err != nil {
			extra.NVMLError = err.Error()
			rep = nil
		}
	}
	if exp.SlurmAutodetect && len(exp.NUMANode) > 0 {
		s := RunSlurmdG(ctx, t)
		extra.Slurmd = &s
	}
	// The kernel log is read at every tier: it holds the Xids raised
	// before verify listened (a GPU that fell off the bus, Xid 79).
	var limit *transport.OutputLimitError
	if lg, err := kmsg.Read(ctx, t); errors.As(err, &limit) {
		// Only Xid and SXid lines cross the wire: a node that prints this
		// many is broken or hostile, and none of them was judged.
		extra.Kernel = &kmsg.Log{Unreadable: fmt.Sprintf("dmesg printed more than %d MiB of Xid and SXid lines and reading was stopped (a node whose kernel log is this large is broken or hostile)", limit.Limit>>20)}
	} else if err != nil {
		extra.Kernel = &kmsg.Log{Unreadable: err.Error()}
	} else {
		if !opts.KernelSince.IsZero() {
			lg = lg.From(opts.KernelSince)
		}
		extra.Kernel = &lg
	}
	if plan.Tier.Includes(TierFull) {
		extra.ImageContent = HashImageFiles(ctx, t, exp, opts.Node, opts.HostRoot, opts.Become, ImageHashTimeout)
	}
	if plan.DCGMDiag > 0 {
		// DCGM's quick diagnostic gets the quick tier's share of the budget.
		res, err := dcgm.Run(ctx, t, plan.DCGMDiag, TierQuick.Budget()-TierProbe.Budget())
		if err != nil {
			res.Failure = budgetOr(ctx, plan, err)
		}
		extra.DCGM = &res
	}
	for name, res := range opts.NCCL {
		if extra.NCCL == nil {
			extra.NCCL = map[string]nccltest.Result{}
		}
		extra.NCCL[name] = res
	}
	for _, n := range plan.NCCL {
		if _, done := extra.NCCL[n.Name]; done || n.MultiNode {
			continue
		}
		res, err := nccltest.RunTest(ctx, t, n.Command, n.Timeout)
		if err != nil {
			res.Failure = budgetOr(ctx, plan, err)
		}
		if extra.NCCL == nil {
			extra.NCCL = map[string]nccltest.Result{}
		}
		extra.NCCL[n.Name] = res
	}
	if opts.Gathered != nil {
		// The report as the checks judged it: GPUs (and their pairs,
		// processes and XID events) under the spec's indexes, matched by
		// PCI bus id, so the Prometheus series and health mode name a GPU
		// as the check ids do.
		judged, _ := identify(exp, rep)
		*opts.Gathered = Gathered{NVML: judged, NCCL: extra.NCCL, Kernel: extra.Kernel, NICs: NICPorts(exp, extra.Facts), Firmware: FirmwareOf(extra.Facts)}
	}
	return Check(exp, rep, extra), nil
}

// budgetOr explains a run error, naming the tier budget when that is what
// ended it.
func budgetOr(ctx context.Context, plan TierPlan, err error) string {
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Sprintf("the %s tier's budget of %s ran out", plan.Tier, plan.Budget.Round(time.Second))
	}
	return err.Error()
}
