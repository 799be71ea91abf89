package verify

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/cpulist"
	"github.com/gpuform/gpuform/provision/bind"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// wantedBinding is the binding the spec computes for the host, with the
// CPUs its NUMA nodes have now; nil (and no error) when the spec asks for
// none or nothing is known of the host.
func wantedBinding(exp Expectation, f *facts.Node) (*bind.Binding, error) {
	if exp.Spec == nil || f == nil || !bind.Wanted(exp.Spec) {
		return nil, nil
	}
	return bind.Compute(exp.Spec, bind.FactsCPULists(f))
}

// checkBinding judges what gpuform put on the node for jobs to find their
// GPU's CPUs and NIC: the binding file `gpuform bind` reads, and the
// NCCL_IB_HCA that jobs started without it read from /etc/nccl.conf.
func checkBinding(exp Expectation, f *facts.Node) []CheckResult {
	if exp.Spec == nil || f == nil || !bind.Wanted(exp.Spec) {
		return nil
	}
	want, err := wantedBinding(exp, f)
	r := CheckResult{ID: string(CheckBindingFile), Expected: bind.File + " as the spec computes it for this host"}
	if err != nil {
		r.Status, r.Message = StatusFail, "the spec's binding does not fit this host: "+err.Error()
		return []CheckResult{r}
	}
	r.Expected = fmt.Sprintf("%s binding %d GPU(s)", bind.File, len(want.GPUs))
	cur, ok := f.ManagedFile(bind.File)
	var have *bind.Binding
	switch {
	case !ok:
		r.Status, r.Observed = StatusFail, "absent"
		r.Message = bind.File + " is not on the node: `gpuform bind` has nothing to read; run gpuform apply"
	default:
		if have, err = bind.Parse([]byte(cur)); err != nil {
			r.Status, r.Observed, r.Message = StatusFail, "unreadable", bind.File+": "+err.Error()+"; run gpuform apply"
			break
		}
		diffs := bindingDiffs(want, have)
		diffs = append(diffs, missingNICs(have, f)...)
		r.Observed = fmt.Sprintf("%d GPU(s)", len(have.GPUs))
		r.Status = StatusPass
		if len(diffs) > 0 {
			r.Status = StatusFail
			r.Message = strings.Join(diffs, "; ")
		}
	}
	out := []CheckResult{r}
	if nc := checkNCCLConfHCA(want, f); nc != nil {
		out = append(out, *nc)
	}
	return out
}

// bindingDiffs says, GPU by GPU, where the file on the node differs from
// the spec's binding with the host's current CPUs: a file written before
// the spec changed, edited by hand, or a NUMA node whose CPUs changed
// (SMT turned off, CPUs taken offline) since apply.
func bindingDiffs(want, have *bind.Binding) []string {
	byIndex := map[int]bind.GPU{}
	for _, g := range have.GPUs {
		byIndex[g.Index] = g
	}
	var out []string
	for _, w := range want.GPUs {
		h, ok := byIndex[w.Index]
		delete(byIndex, w.Index)
		if !ok {
			out = append(out, fmt.Sprintf("gpu%d is not in the file (spec: %s)", w.Index, w))
			continue
		}
		if h.NUMA != w.NUMA || h.CPUs != w.CPUs {
			out = append(out, fmt.Sprintf("gpu%d: the file binds NUMA node %d (CPUs %q), the spec node %d whose CPUs are %q on this host now", w.Index, h.NUMA, h.CPUs, w.NUMA, w.CPUs))
		}
		if h.NIC != w.NIC || h.Netdev != w.Netdev || h.RDMA != w.RDMA {
			out = append(out, fmt.Sprintf("gpu%d: the file pairs NIC %q, the spec %q", w.Index, h.NIC, w.NIC))
		}
	}
	for _, i := range slices.Sorted(maps.Keys(byIndex)) {
		out = append(out, fmt.Sprintf("gpu%d is in the file but not in the spec", i))
	}
	return out
}

// missingNICs names the RDMA NICs of the file that the host does not
// have: a job pointed at one fails NCCL's init, or falls back to sockets.
func missingNICs(b *bind.Binding, f *facts.Node) []string {
	if len(f.RDMA) == 0 {
		// Nothing known of the host's RDMA devices (the probe could not
		// read /sys/class/infiniband): the NIC checks say more.
		return nil
	}
	have := map[string]bool{}
	for _, d := range f.RDMA {
		have[d.Name] = true
	}
	var out []string
	seen := map[string]bool{}
	for _, g := range b.GPUs {
		if g.RDMA && g.NIC != "" && !have[g.NIC] && !seen[g.NIC] {
			seen[g.NIC] = true
			out = append(out, fmt.Sprintf("gpu%d's NIC %s is not an RDMA device of this host", g.Index, g.NIC))
		}
	}
	return out
}

// checkNCCLConfHCA judges /etc/nccl.conf's NCCL_IB_HCA, where the host
// sets it, against the pairing: a job started without `gpuform bind` reads
// it, and a paired NIC it leaves out is one no such job uses.
func checkNCCLConfHCA(want *bind.Binding, f *facts.Node) *CheckResult {
	if f.NCCLConf == nil {
		return nil
	}
	val, ok := ncclConfValue(f.NCCLConf.Content, "NCCL_IB_HCA")
	if !ok {
		return nil
	}
	var nics []string
	for _, g := range want.GPUs {
		if g.RDMA && g.NIC != "" && !slices.Contains(nics, g.NIC) {
			nics = append(nics, g.NIC)
		}
	}
	if len(nics) == 0 {
		return nil
	}
	r := CheckResult{ID: string(CheckBindingNCCLConf), Observed: "NCCL_IB_HCA=" + val,
		Expected: "selects " + strings.Join(nics, ", "), Status: StatusPass}
	hca := bind.ParseHCA(val)
	var left []string
	for _, n := range nics {
		if !hca.Selects(n) {
			left = append(left, n)
		}
	}
	if len(left) > 0 {
		r.Status = StatusFail
		r.Message = fmt.Sprintf("%s's NCCL_IB_HCA leaves out the paired NIC(s) %s: jobs started without `gpuform bind` never use them; apply the spec, or fix the file's list",
			resource.NCCLConfFile, strings.Join(left, ", "))
	}
	return &r
}

// ncclConfValue reads KEY=value from nccl.conf, the last setting winning
// as in NCCL's own reader.
func ncclConfValue(content, key string) (string, bool) {
	val, found := "", false
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == key {
			val, found = strings.TrimSpace(v), true
		}
	}
	return val, found
}

// checkProcesses judges every compute process NVML reports on a GPU
// (verify -processes): its allowed CPUs must lie within its GPU's NUMA
// node (the spec's bind, else the GPU's NVML CPU affinity) and its NIC
// variables must select its GPU's paired NIC alone. A process whose /proc
// could not be read is an error, never a pass. One result per GPU, by
// the spec's index (rep and its processes are identified by bus id).
func checkProcesses(exp Expectation, rep *nvmlfacts.Report, id gpuIdentity, f *facts.Node) []CheckResult {
	if !exp.Processes || rep == nil {
		return nil
	}
	want, err := wantedBinding(exp, f)
	bound := map[int]bind.GPU{}
	if err == nil && want != nil {
		for _, g := range want.GPUs {
			bound[g.Index] = g
		}
	}
	var devices []string
	if f != nil {
		for _, d := range f.RDMA {
			devices = append(devices, d.Name)
		}
	}
	for _, g := range bound {
		if g.RDMA && g.NIC != "" && !slices.Contains(devices, g.NIC) {
			devices = append(devices, g.NIC)
		}
	}
	slices.Sort(devices)
	// The GPUs are judged in spec order (rep is identified), with each
	// declared GPU NVML does not enumerate among them: its processes
	// cannot be listed, and nvml.gpu_count fails for it.
	var indexes []int
	for _, g := range rep.GPUs {
		indexes = append(indexes, g.Index)
	}
	indexes = append(indexes, slices.Collect(maps.Keys(id.missing))...)
	slices.Sort(indexes)
	var out []CheckResult
	for _, idx := range indexes {
		r := CheckResult{ID: CheckProcessBinding.GPU(idx)}
		g := rep.GPUByIndex(idx)
		if g == nil {
			r.Status, r.Message = StatusSkip, id.absent(idx)
			out = append(out, r)
			continue
		}
		bg, isBound := bound[g.Index]
		cpus := g.CPUAffinity
		if isBound && bg.NUMA != bind.Unbound {
			cpus = bg.CPUs
		}
		r.Expected = "CPUs within " + cpus
		if cpus == "" {
			r.Expected = "(no NUMA node known for this GPU)"
		}
		if bg.NIC != "" {
			r.Expected += ", NIC " + bg.NIC
		}
		if cpus == "" && bg.NIC == "" {
			// Nothing says where this GPU's jobs belong: a pass would
			// judge nothing.
			r.Status, r.Message = StatusSkip, "nothing to judge: the spec binds this GPU to no NUMA node or NIC, and NVML reports no CPU affinity for it"
			out = append(out, r)
			continue
		}
		if rep.Processes == nil {
			r.Status, r.Message = StatusError, "could not tell: -processes asks for the GPU's compute processes, and "+rep.Source+" does not list them (the NVML agent could not run)"
			out = append(out, r)
			continue
		}
		var procs []nvmlfacts.Process
		for _, p := range rep.Processes.List {
			if p.GPU == g.Index {
				procs = append(procs, p)
			}
		}
		if len(procs) == 0 {
			r.Status, r.Message = StatusSkip, "no compute process on this GPU"
			out = append(out, r)
			continue
		}
		var seen, fails, errs []string
		for _, p := range procs {
			seen = append(seen, describeProcess(p))
			bad, unreadable := judgeProcess(p, cpus, bg, devices)
			fails = append(fails, bad...)
			errs = append(errs, unreadable...)
		}
		r.Observed = strings.Join(seen, "; ")
		switch {
		case len(fails) > 0:
			r.Status = StatusFail
			r.Message = strings.Join(append(fails, errs...), "; ") + "; start jobs with `gpuform bind -- COMMAND`"
		case len(errs) > 0:
			r.Status, r.Message = StatusError, strings.Join(errs, "; ")
		default:
			r.Status = StatusPass
		}
		if rep.Processes.Modelled {
			r.Observed += " (modelled: replayed processes of a simulated node)"
		}
		out = append(out, r)
	}
	return out
}

func describeProcess(p nvmlfacts.Process) string {
	s := "pid " + strconv.Itoa(p.PID)
	if p.Name != "" {
		s += " (" + p.Name + ")"
	}
	if p.CPUsAllowed != "" {
		s += " CPUs " + p.CPUsAllowed
	}
	for _, k := range nvmlfacts.ProcessVariables() {
		if v, ok := p.Env[k]; ok {
			s += " " + k + "=" + v
		}
	}
	return s
}

// judgeProcess returns why p is not bound to its GPU (bad) and what of it
// could not be read (unreadable). cpus is the GPU's NUMA node's cpulist
// ("" when unknown: not judged); g.NIC its paired NIC ("" when none);
// devices the host's RDMA devices, against which a prefix NCCL_IB_HCA is
// resolved.
func judgeProcess(p nvmlfacts.Process, cpus string, g bind.GPU, devices []string) (bad, unreadable []string) {
	who := fmt.Sprintf("pid %d", p.PID)
	if p.Name != "" {
		who += " (" + p.Name + ")"
	}
	if p.StatusError != "" {
		unreadable = append(unreadable, who+": "+p.StatusError)
	} else if cpus != "" {
		allowed, err1 := cpulist.Parse(p.CPUsAllowed)
		node, err2 := cpulist.Parse(cpus)
		switch {
		case err1 != nil:
			unreadable = append(unreadable, fmt.Sprintf("%s: Cpus_allowed_list %q: %v", who, p.CPUsAllowed, err1))
		case err2 != nil:
			unreadable = append(unreadable, fmt.Sprintf("%s: the GPU's CPUs %q: %v", who, cpus, err2))
		default:
			var outside []int
			for _, c := range allowed {
				if !slices.Contains(node, c) {
					outside = append(outside, c)
				}
			}
			if len(outside) > 0 {
				bad = append(bad, fmt.Sprintf("%s may run on CPUs %s, %d of them outside its GPU's NUMA node (CPUs %s)", who, p.CPUsAllowed, len(outside), cpus))
			}
		}
	}
	if g.NIC == "" {
		return bad, unreadable
	}
	if p.EnvError != "" {
		unreadable = append(unreadable, who+": "+p.EnvError)
		return bad, unreadable
	}
	if g.RDMA {
		v, ok := p.Env["NCCL_IB_HCA"]
		if !ok {
			bad = append(bad, fmt.Sprintf("%s has no NCCL_IB_HCA: NCCL picks from every NIC /etc/nccl.conf lists, not its GPU's %s", who, g.NIC))
		} else {
			hca := bind.ParseHCA(v)
			var picked []string
			for _, d := range devices {
				if hca.Selects(d) {
					picked = append(picked, d)
				}
			}
			if !hca.Selects(g.NIC) || len(picked) > 1 {
				bad = append(bad, fmt.Sprintf("%s has NCCL_IB_HCA=%s, which selects %s, not its GPU's %s alone", who, v, orNone(picked), g.NIC))
			}
		}
	}
	if v, ok := p.Env["UCX_NET_DEVICES"]; ok {
		for _, e := range strings.Split(v, ",") {
			dev, _, _ := strings.Cut(strings.TrimSpace(e), ":")
			if dev != g.NIC && (g.Netdev == "" || dev != g.Netdev) {
				bad = append(bad, fmt.Sprintf("%s has UCX_NET_DEVICES=%s, not its GPU's %s", who, v, g.NIC))
				break
			}
		}
	}
	return bad, unreadable
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none of this host's devices"
	}
	return strings.Join(s, ", ")
}
