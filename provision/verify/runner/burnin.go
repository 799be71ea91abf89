package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gpuform/gpuform/provision/outlier"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/burnin"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/spec"
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
// into burnin.* checks, and the record for -require-burnin, passed or
// failed, left in pending: finishBurnin adds the comparison of clocks
// across the hosts and writes it on the node. A host whose NVML facts
// are missing gets no record: it could not name the GPUs it would
// qualify.
//
// rep is the NVML report read before the burn-in; readNVML reads it again
// after the load and the NCCL runs, so the ECC and NVLink error counters
// are compared around both, with the PCIe AER counters.
//
// peer are the iterations of the group's multi-node runs the host took
// part in (burninGroupRuns): judged as its single-node runs are.
//
// The node's last record is removed before the burn-in starts, so one
// that does not finish leaves no record that qualifies the node.
func runBurnin(ctx context.Context, t transport.Transport, tg target.Host, exp verify.Expectation, rep *nvmlfacts.Report, readNVML func(context.Context) (*nvmlfacts.Report, error), peer map[string][]nccltest.Result, pending *burninPending, o Options) []verify.CheckResult {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	d := verify.BurninDuration(tg.Node)
	// The last record goes first: a burn-in that does not finish leaves
	// none, never the one from before it.
	if err := burnin.RemoveRecord(ctx, t, tg.Host.Become != ""); err != nil {
		return []verify.CheckResult{verify.BurninWriteCheck(err, "the burn-in did not start: the last record could not be removed, and it would outlive this burn-in: "+err.Error())}
	}
	started := now()
	run, err := burnin.RunNode(ctx, t, burnin.NodeOptions{Duration: d, DCGMOptional: exp.DCGMOptional || (exp.DCGMNotInstalled && !exp.DCGM)})
	if err != nil {
		return []verify.CheckResult{verify.BurninWriteCheck(err, "the burn-in did not finish: "+err.Error())}
	}
	run.NCCL = repeatNCCL(ctx, t, exp)
	for _, n := range exp.NCCL {
		if its, ok := peer[n.Name]; ok && n.MultiNode {
			run.NCCL = append(run.NCCL, burnin.NCCLFrom(n.Name, its))
		}
	}
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
	*pending = burninPending{tg: tg, rec: &rec, clocks: burnin.ClockValues(tg.Host.Name, run.Samples)}
	return checks
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

// burninGroupRuns repeats, at the burn-in tier, each node group's
// multi-node nccl_test that the fleet tier ran to its end (that run is
// the first iteration) until it has run burnin.NCCLIterations times,
// from the group's first host with the same command, within
// burnin.NCCLBudget shared by the group's tests: the long run with
// peers whose #wrong and busbw variance each host's burn-in judges. A
// group whose run did not finish gets none: its nccl.NAME check already
// fails or is not run. The runs go before the hosts' own burn-ins, with
// the fleet tier's group run.
func burninGroupRuns(ctx context.Context, targets []target.Host, o Options, multi map[*spec.Node]map[string]nccltest.Result) map[*spec.Node]map[string][]nccltest.Result {
	out := map[*spec.Node]map[string][]nccltest.Result{}
	if o.Tier != verify.TierBurnin || o.Local || o.Launch != nil {
		return out
	}
	first := map[*spec.Node]target.Host{}
	var order []*spec.Node
	for _, tg := range targets {
		if _, ok := first[tg.Node]; !ok {
			first[tg.Node] = tg
			order = append(order, tg.Node)
		}
	}
	for _, n := range order {
		var tests []verify.NCCLExpectation
		for _, nt := range verify.ExpectationFor(n).NCCL {
			if res, ok := multi[n][nt.Name]; ok && nt.MultiNode && res.Failure == "" && res.NotRun == "" && res.Command != "" {
				tests = append(tests, nt)
			}
		}
		if len(tests) == 0 {
			continue
		}
		share := burnin.NCCLBudget / time.Duration(burnin.NCCLIterations*len(tests))
		out[n] = map[string][]nccltest.Result{}
		for _, nt := range tests {
			timeout := nt.Timeout
			if timeout <= 0 || timeout > share {
				timeout = share
			}
			its := []nccltest.Result{multi[n][nt.Name]}
			t, err := o.Target.Connect(ctx, first[n].Host)
			for len(its) < burnin.NCCLIterations {
				if err != nil {
					its = append(its, nccltest.Result{Failure: fmt.Sprintf("cannot reach %s to launch the multi-node test: %v", first[n].Host.Name, err)})
					continue
				}
				res, rerr := nccltest.RunTest(ctx, t, multi[n][nt.Name].Command, timeout)
				if rerr != nil && res.Failure == "" {
					res.Failure = rerr.Error()
				}
				its = append(its, res)
			}
			if err == nil {
				t.Close()
			}
			out[n][nt.Name] = its
		}
	}
	return out
}

// burninPending is a host's burn-in record waiting for finishBurnin, and
// its GPUs' clocks under load for the comparison across hosts; rec is nil
// when the host has no record to write.
type burninPending struct {
	tg     target.Host
	rec    *burnin.Record
	clocks []outlier.Value
}

// orObserved is a check's message, else what it observed.
func orObserved(c verify.CheckResult) string {
	if c.Message != "" {
		return c.Message
	}
	return c.Observed
}

// finishBurnin compares the clocks under load of the hosts burnt in
// together (burnin.FleetClocks), adds each host's finding to its checks
// and its record, and writes each record on its node (burnin.write), so
// a record never says passed of a node the comparison failed, nor of one
// that failed another check of the run (each is a failed finding of the
// record).
func finishBurnin(ctx context.Context, hosts []report.Host, pending map[string]*burninPending, o Options) {
	var values []outlier.Value
	var write []target.Host
	for _, h := range hosts {
		if p := pending[h.Host]; p != nil && p.rec != nil {
			values = append(values, p.clocks...)
			write = append(write, p.tg)
		}
	}
	if len(write) == 0 {
		return
	}
	fleet := burnin.FleetClocks(values, 0)
	at := map[string]int{}
	// The tier is the fleet tier's checks, then the burn-in: a host that
	// failed any of the others is not burnt in, whatever its burn-in's
	// own parts found, and its record says so, naming them.
	others := map[string][]burnin.Finding{}
	for i, h := range hosts {
		at[h.Host] = i
		for _, c := range h.Checks {
			if c.Blocks() && !strings.HasPrefix(c.ID, "burnin.") {
				others[h.Host] = append(others[h.Host], burnin.Finding{Check: c.ID, Status: burnin.StatusFail,
					Message: "failed in the burn-in tier's run (" + string(c.Status) + "): " + orObserved(c)})
			}
		}
	}
	var mu sync.Mutex
	target.Each(ctx, write, o.Target, func(ctx context.Context, tg target.Host) error {
		p := pending[tg.Host.Name]
		fs := fleet[tg.Host.Name]
		for _, f := range append(slices.Clone(fs), others[tg.Host.Name]...) {
			p.rec.Findings = append(p.rec.Findings, f)
			if f.Status != burnin.StatusPass {
				p.rec.Passed = false
			}
		}
		werr := func() error {
			t, err := o.Target.Connect(ctx, tg.Host)
			if err != nil {
				return err
			}
			defer t.Close()
			return burnin.WriteRecord(ctx, t, *p.rec, tg.Host.Become != "")
		}()
		mu.Lock()
		defer mu.Unlock()
		h := &hosts[at[tg.Host.Name]]
		h.Checks = append(h.Checks, verify.BurninChecks(fs)...)
		h.Checks = append(h.Checks, verify.BurninWriteCheck(werr, ""))
		return werr
	})
}
