package runner

import (
	"context"
	"time"

	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/burnin"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// hostBudget is the hard limit of one host: the burn-in tier's follows
// the node's verify { burnin { duration } }.
func hostBudget(o Options, tg target.Host) time.Duration {
	switch {
	case o.Budget != 0:
		return o.Budget
	case o.Tier == verify.TierBurnin:
		return verify.BurninBudget(verify.BurninDuration(tg.Node))
	}
	return o.Tier.Budget()
}

// runBurnin runs the burn-in tier's own part on a host after the fleet
// tier's checks: the node side (burnin.RunNode), judged (burnin.Evaluate)
// into burnin.* checks, and the record written on the node, passed or
// failed, for -require-burnin. A host whose NVML facts are missing gets
// no record: it could not name the GPUs it would qualify.
//
// rep is the NVML report read before the burn-in; readNVML reads it again
// after the load and the NCCL runs, so the ECC and NVLink error counters
// are compared around both, with the PCIe AER counters.
func runBurnin(ctx context.Context, t transport.Transport, tg target.Host, exp verify.Expectation, rep *nvmlfacts.Report, readNVML func(context.Context) (*nvmlfacts.Report, error), o Options) []verify.CheckResult {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	d := verify.BurninDuration(tg.Node)
	started := now()
	run, err := burnin.RunNode(ctx, t, burnin.NodeOptions{Duration: d, DCGMOptional: exp.DCGMOptional || (exp.DCGMNotInstalled && !exp.DCGM)})
	if err != nil {
		return []verify.CheckResult{verify.BurninWriteCheck(err, "the burn-in did not finish: "+err.Error())}
	}
	run.NCCL = repeatNCCL(ctx, t, exp)
	if rep != nil {
		after, err := readNVML(ctx)
		switch {
		case err != nil:
			run.CountersError = err.Error()
		default:
			run.Before, run.After = burnin.AddCounters(run.Before, rep), burnin.AddCounters(run.After, after)
		}
	}
	lim := burnin.Limits{MaxTempC: exp.MaxTemperatureC}
	findings := burnin.Evaluate(run, lim)
	checks := verify.BurninChecks(findings)
	if rep == nil || len(rep.GPUs) == 0 {
		return append(checks, verify.BurninWriteCheck(nil, "no NVML facts: the burn-in's record cannot name the GPUs it qualified and was not written"))
	}
	rec := burnin.NewRecord(burnin.IdentityOf(rep), started, now(), d, findings)
	rec.Modelled = isMockNVML(rep)
	werr := burnin.WriteRecord(ctx, t, rec, tg.Host.Become != "")
	return append(checks, verify.BurninWriteCheck(werr, ""))
}

// isMockNVML: a simulated node's NVML report names its mock system; its
// burn-in record is marked modelled.
func isMockNVML(rep *nvmlfacts.Report) bool { return rep != nil && rep.Source == nvmlfacts.SourceMock }

// repeatNCCL runs each of the spec's single-node nccl-tests runs
// burnin.NCCLIterations times, after the load, within burnin.NCCLBudget:
// the long run whose #wrong and busbw variance the burn-in judges.
func repeatNCCL(ctx context.Context, t transport.Transport, exp verify.Expectation) []burnin.NCCLRun {
	var single []verify.NCCLExpectation
	for _, n := range exp.NCCL {
		if !n.MultiNode {
			single = append(single, n)
		}
	}
	if len(single) == 0 {
		return nil
	}
	share := burnin.NCCLBudget / time.Duration(burnin.NCCLIterations*len(single))
	var out []burnin.NCCLRun
	for _, n := range single {
		timeout := n.Timeout
		if timeout <= 0 || timeout > share {
			timeout = share
		}
		var its []nccltest.Result
		for range burnin.NCCLIterations {
			res, err := nccltest.RunTest(ctx, t, n.Command, timeout)
			if err != nil {
				res.Failure = err.Error()
			}
			its = append(its, res)
		}
		out = append(out, burnin.NCCLFrom(n.Name, its))
	}
	return out
}
