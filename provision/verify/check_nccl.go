package verify

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/internal/cmdline"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

func checkNCCL(exp Expectation, rep *nvmlfacts.Report, extra HostFacts) []CheckResult {
	var out []CheckResult
	cat := extra.Catalogue
	if cat == nil {
		cat = NewCatalogue(exp.KB.NCCLFloors())
	}
	for _, t := range exp.NCCL {
		res, ran := extra.NCCL[t.Name]
		out = append(out, judgeNCCLTest(exp, rep, cat, extra.Tier, t, res, ran))
	}
	return out
}

// JudgeHostMultiNode judges, on one host, multi-node test t's check as
// verify judges it when the host is checked with the group's result
// (ran false: no result for this host): for an engine that checks the
// hosts first and runs the group's tests after (provision/engine/slurm),
// so the host's checks survive a -deadline that ends the group's run. rep
// is the host's NVML report (nil when none was read).
// Like Check, it attaches the check's remedy and redacts the spec's
// secrets from it.
func JudgeHostMultiNode(exp Expectation, rep *nvmlfacts.Report, tier Tier, t NCCLExpectation, res nccltest.Result, ran bool) CheckResult {
	out := []CheckResult{judgeNCCLTest(exp, rep, NewCatalogue(exp.KB.NCCLFloors()), tier, t, res, ran)}
	attachRemedies(exp.KB, out, rep, HostFacts{Tier: tier})
	return redactResults(exp, out)[0]
}

// judgeNCCLTest judges one nccl_test on a host: res is its result when
// ran.
func judgeNCCLTest(exp Expectation, rep *nvmlfacts.Report, cat *Catalogue, tier Tier, t NCCLExpectation, res nccltest.Result, ran bool) CheckResult {
	var r CheckResult
	if ran && res.NotRun != "" {
		// A host of the group that did not take part in the group's
		// run: the run judges the hosts in it, not this one.
		r, _ = judgeMultiNode(exp, rep, cat, t, nccltest.Result{}, false)
		r.ID = CheckNCCL.Named(t.Name)
		r.Status, r.Needed, r.Observed, r.Message = StatusNotRun, true, "not run", "not run: host did not take part ("+res.NotRun+")"
		return r
	}
	if t.MultiNode || spansNodes(res) {
		r, _ = judgeMultiNode(exp, rep, cat, t, res, ran)
		if !ran {
			// At -tier fleet the group's run was needed on this
			// host; below it the run was left to a deeper tier.
			notRun(&r, tier, TierFleet, "multi-node nccl-tests run once per node group from -tier fleet",
				"-tier fleet runs the node group's multi-node test, but no run of it was made for this host (multi-node tests never run per host nor with --local)")
		}
	} else {
		r = judgeSingleNode(exp, rep, cat, t, res, ran)
		if !ran {
			notRun(&r, tier, TierFull, "single-node nccl-tests run from -tier full", "the tier runs it, but it did not run on this host")
		}
	}
	if ran && res.NotInstalled && exp.NCCLOptional {
		r.Status, r.Observed = StatusSkip, "not installed"
		r.Message = res.Failure + "; the spec marks nccl_tests optional"
	}
	r.ID = CheckNCCL.Named(t.Name)
	return r
}

// notRun marks r as not run: left to a deeper tier when the run's tier is
// below from (leftFor says where it runs), else needed by the tier and
// missing on this host (why), which fails the host.
func notRun(r *CheckResult, tier, from Tier, leftFor, why string) {
	r.Status = StatusNotRun
	if tier.Includes(from) {
		r.Needed, r.Message = true, "not run: "+why
		return
	}
	at := "this tier"
	if tier != "" {
		at = "-tier " + string(tier)
	}
	r.Message = "not run at " + at + ": " + leftFor
}

// judgeSingleNode judges a run on one node against the spec's floor, else
// the catalogue's single-node floor for the node's GPU model,
// interconnect and GPU count.
func judgeSingleNode(exp Expectation, rep *nvmlfacts.Report, cat *Catalogue, t NCCLExpectation, res nccltest.Result, ran bool) CheckResult {
	var r CheckResult
	floor, floorNote := t.MinBusBWGBps, "from spec"
	var th *Threshold
	if floor == 0 {
		if found, ok := cat.Lookup(modelOf(exp, rep), exp.Interconnect, exp.GPUCount, collectiveOf(t.Command)); ok {
			th = &found
			floor, floorNote = found.MinBusBWGBps, "catalogue: "+found.Platform
		}
	}
	if floor > 0 {
		r.Expected = fmt.Sprintf("busbw >= %.2f GB/s (%s), #wrong 0", floor, floorNote)
	} else {
		r.Expected = "#wrong 0, out of bounds 0 (no busbw floor known; set min_busbw_gbps)"
	}
	if !ran {
		r.Status, r.Message = StatusNotRun, "single-node run: it runs from -tier full"
		return r
	}
	judgeBusBW(&r, res, floor, th, nil)
	return r
}

// judgeMultiNode judges a run across nodes: never against a single-node
// floor (NVLink inside a node is far faster than the network between
// nodes), but against the spec's floor or a multi-node floor for the GPU
// model, GPUs per node, node count and network. Whether or not a floor is
// known, a run that fell back to NCCL's TCP socket transport, or left GPUs
// of a node unused, fails: its busbw says nothing about the fabric.
func judgeMultiNode(exp Expectation, rep *nvmlfacts.Report, cat *Catalogue, t NCCLExpectation, res nccltest.Result, ran bool) (CheckResult, float64) {
	var r CheckResult
	network := t.Network
	if network == "" {
		network = "an unknown network (set network in the nccl_test block)"
	}
	if !ran {
		if t.MinBusBWGBps > 0 {
			r.Expected = fmt.Sprintf("busbw >= %.2f GB/s (from spec), #wrong 0", t.MinBusBWGBps)
		} else {
			r.Expected = fmt.Sprintf("busbw >= the multi-node floor for the run's node count over %s, #wrong 0", network)
		}
		r.Status, r.Message = StatusNotRun, "multi-node run: it runs once per node group at -tier fleet, never per host nor with --local"
		return r, 0
	}
	last := lastRun(res)
	hosts, ranks := hostsOf(last)
	perNode := exp.GPUCount
	if perNode == 0 && rep != nil {
		perNode = len(rep.GPUs)
	}
	if perNode == 0 {
		for _, n := range ranks {
			perNode = max(perNode, n)
		}
	}
	model := modelOf(exp, rep)
	if model == "" && last != nil && len(last.Devices) > 0 {
		model = last.Devices[0].Name
	}

	var extraReasons []string
	if why := socketTransport(t.Command, res); why != "" {
		extraReasons = append(extraReasons, why)
	}
	if len(hosts) == 1 {
		extraReasons = append(extraReasons, fmt.Sprintf("every rank ran on %s: the run did not span nodes", hosts[0]))
	}
	for _, h := range hosts {
		if ranks[h] < perNode {
			extraReasons = append(extraReasons, fmt.Sprintf("%s ran %d rank(s) on a node with %d GPUs: a multi-node check must use every GPU of each node (mpirun -np/-N, srun --ntasks-per-node, or -g)", h, ranks[h], perNode))
		}
	}

	floor, floorNote := t.MinBusBWGBps, "from spec"
	var th *Threshold
	shape := fmt.Sprintf("%s, %d GPUs per node, %d nodes, over %s", modelKeyOr(model), perNode, len(hosts), network)
	if floor == 0 && t.Network != "" && len(hosts) > 1 {
		if found, ok := cat.LookupMultiNode(model, perNode, len(hosts), t.Network, collectiveOf(t.Command)); ok {
			th = &found
			floor, floorNote = found.MinBusBWGBps, "multi-node catalogue: "+found.Platform
		}
	}
	checks := "#wrong 0, not over TCP sockets, every GPU of each node used"
	switch {
	case th != nil && th.AvgFrom > 0:
		r.Expected = fmt.Sprintf("Avg bus bandwidth over %s-%s >= %.2f GB/s (%s; %s), %s", nccltest.FormatSize(th.AvgFrom), nccltest.FormatSize(th.AvgTo), floor, floorNote, shape, checks)
	case floor > 0:
		r.Expected = fmt.Sprintf("busbw >= %.2f GB/s (%s; %s), %s", floor, floorNote, shape, checks)
	default:
		r.Expected = fmt.Sprintf("%s (no multi-node busbw floor known for %s; set min_busbw_gbps)", checks, shape)
	}
	judgeBusBW(&r, res, floor, th, extraReasons)
	return r, floor
}

// JudgeMultiNodeRun judges one multi-node run of test t as verify judges
// a node group's: against the spec's floor, else the catalogue's floor for
// the node count the run's rank lines show — so a 2-node run of a pair is
// held to the 2-node floor, never the group's nor a single-node one. It
// returns the check, the busbw it read (GB/s, 0 when none) and the floor
// applied (0 when none is known). cat nil means the floors of exp.KB.
func JudgeMultiNodeRun(cat *Catalogue, exp Expectation, t NCCLExpectation, res nccltest.Result) (CheckResult, float64, float64) {
	if cat == nil {
		cat = NewCatalogue(exp.KB.NCCLFloors())
	}
	r, floor := judgeMultiNode(exp, nil, cat, t, res, true)
	r.ID = CheckNCCL.Named(t.Name)
	return r, res.Judge(0).BusBW, floor
}

// judgeBusBW sets the status, observation and message of r from a run
// judged against floor (0: bandwidth not judged) and the rules every run
// must meet; extra are reasons of the caller's that fail the run too.
func judgeBusBW(r *CheckResult, res nccltest.Result, floor float64, th *Threshold, extra []string) {
	judged := floor
	if th != nil && (th.AvgFrom > 0 || th.MessageBytes > 0) {
		// A catalogue floor is judged at the size (or over the sweep)
		// its source read it at, below.
		judged = 0
	}
	v := res.Judge(judged)
	if v.Size > 0 {
		r.Observed = fmt.Sprintf("busbw %.2f GB/s at %s", v.BusBW, nccltest.FormatSize(v.Size))
		if last := res.Runs[len(res.Runs)-1]; last.NGPUs > 0 && !last.Validation {
			// -c 0: nccl-tests counted no #wrong, so a pass says
			// nothing about data corruption.
			r.Observed += " (not validated: -c 0, #wrong not counted)"
		}
	}
	reasons := append(slices.Clone(v.Reasons), extra...)
	var unjudged string
	if th != nil && v.Size > 0 {
		switch {
		case th.AvgFrom > 0:
			avg, ok := avgBusBW(lastRun(res), th.AvgFrom, th.AvgTo)
			if !ok {
				unjudged = fmt.Sprintf("the catalogue floor is nccl-tests' Avg bus bandwidth over %s-%s, which this run's sweep does not cover; run -b %s -e %s -f 2 or set min_busbw_gbps",
					nccltest.FormatSize(th.AvgFrom), nccltest.FormatSize(th.AvgTo), nccltest.FormatSize(th.AvgFrom), nccltest.FormatSize(th.AvgTo))
				break
			}
			r.Observed += fmt.Sprintf("; Avg bus bandwidth over %s-%s %.2f GB/s", nccltest.FormatSize(th.AvgFrom), nccltest.FormatSize(th.AvgTo), avg)
			if avg < floor {
				reasons = append(reasons, fmt.Sprintf("Avg bus bandwidth over %s-%s is %.2f GB/s, below the floor %.2f GB/s", nccltest.FormatSize(th.AvgFrom), nccltest.FormatSize(th.AvgTo), avg, floor))
			}
		case v.Size >= th.MessageBytes:
			if v.BusBW < floor {
				reasons = append(reasons, fmt.Sprintf("busbw %.2f GB/s at %s is below the floor %.2f GB/s", v.BusBW, nccltest.FormatSize(v.Size), floor))
			}
		case v.BusBW >= floor:
			// The floor was read at a larger size than the run reached,
			// and the largest size measured already clears it: busbw
			// climbs with message size towards the fabric's peak, so the
			// floor's size would clear it too (-e 8G is what most people
			// run against a floor read at 16G).
			r.Observed += fmt.Sprintf(" (the floor is for %s; the run's largest size already clears it)", nccltest.FormatSize(th.MessageBytes))
		default:
			// Below the floor at a smaller size than the floor's: the
			// larger sizes the run did not reach may still clear it, so
			// this is not a failure of the node but of the sweep.
			unjudged = fmt.Sprintf("busbw %.2f GB/s at %s, the run's largest size, is below the floor %.2f GB/s, which is for %s: the sweep ends too early to judge; extend it (-e %s) or set min_busbw_gbps",
				v.BusBW, nccltest.FormatSize(v.Size), floor, nccltest.FormatSize(th.MessageBytes), nccltest.FormatSize(th.MessageBytes))
		}
	}
	switch {
	case len(reasons) > 0:
		r.Status, r.Message = StatusFail, strings.Join(reasons, "; ")
	case unjudged != "":
		r.Status, r.Message = StatusError, unjudged
	default:
		r.Status = StatusPass
		if len(v.Causes) > 0 {
			r.Message = "NCCL warned: " + v.Causes[0]
		}
	}
}

// avgBusBW is nccl-tests' "Avg bus bandwidth" restricted to the sizes
// from lo to hi: the mean of out-of-place and in-place busbw of those
// rows. ok is false unless the run has rows at both ends.
func avgBusBW(r *nccltest.Run, lo, hi int64) (float64, bool) {
	if r == nil {
		return 0, false
	}
	var sum float64
	var n int
	var haveLo, haveHi bool
	for _, row := range r.Rows {
		if row.Size < lo || row.Size > hi {
			continue
		}
		haveLo = haveLo || row.Size == lo
		haveHi = haveHi || row.Size == hi
		sum += row.OutOfPlace.BusBW + row.InPlace.BusBW
		n += 2
	}
	if !haveLo || !haveHi || n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// socketTransport says why a run went over NCCL's TCP socket transport:
// the command forced it, or NCCL's INFO lines show it; "" otherwise.
func socketTransport(cmd string, res nccltest.Result) string {
	if set := cmdline.SocketForced(cmd); set != "" {
		return fmt.Sprintf("the command sets %s: NCCL moved the data over TCP sockets (NET/Socket), not InfiniBand/RoCE, so the run does not measure the fabric", set)
	}
	for _, run := range res.Runs {
		if strings.EqualFold(run.Network, "Socket") {
			return "NCCL used its TCP socket transport (NET/Socket) between the nodes, not InfiniBand/RoCE (NET/IB): check that the RDMA devices are visible to the job and NCCL_IB_HCA names them"
		}
	}
	return ""
}

// spansNodes reports whether a run's rank lines name more than one host.
func spansNodes(res nccltest.Result) bool {
	hosts, _ := hostsOf(lastRun(res))
	return len(hosts) > 1
}

// lastRun is the run a configured command produced (see Result.Judge).
func lastRun(res nccltest.Result) *nccltest.Run {
	if len(res.Runs) == 0 {
		return nil
	}
	return &res.Runs[len(res.Runs)-1]
}

// hostsOf lists the hosts of a run's rank lines in order of appearance,
// with the number of ranks on each.
func hostsOf(r *nccltest.Run) ([]string, map[string]int) {
	ranks := map[string]int{}
	var hosts []string
	if r == nil {
		return nil, ranks
	}
	for _, d := range r.Devices {
		if ranks[d.Host] == 0 {
			hosts = append(hosts, d.Host)
		}
		ranks[d.Host]++
	}
	return hosts, ranks
}

func modelKeyOr(model string) string {
	if model == "" {
		return "unknown GPU model"
	}
	return model
}

// modelOf picks the GPU model for catalogue lookups: the spec's, else the
// first GPU's name.
func modelOf(exp Expectation, rep *nvmlfacts.Report) string {
	if exp.GPUModel != "" {
		return exp.GPUModel
	}
	if rep != nil && len(rep.GPUs) > 0 {
		return rep.GPUs[0].Name
	}
	return ""
}

// collectiveOf guesses the collective from the test binary name, e.g.
// "all_reduce_perf" → "all_reduce".
func collectiveOf(cmd string) string {
	words, err := cmdline.Split(cmd)
	if err != nil {
		return ""
	}
	for _, w := range words {
		base := w[strings.LastIndexByte(w, '/')+1:]
		if c, ok := strings.CutSuffix(base, "_perf"); ok {
			return c
		}
	}
	return ""
}
