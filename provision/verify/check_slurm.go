package verify

import (
	"context"
	_ "embed"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/provision/gres"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// SlurmdGRES is what `slurmd -G` printed on a host: the GRES slurmd would
// register.
type SlurmdGRES struct {
	// GRES are the GRES it reports.
	GRES []gres.Detected
	// Errors are the error lines it printed about gres.conf or detection.
	Errors []string
	// Failure says why slurmd -G could not be run; "" when it ran.
	Failure string
}

// slurmdGScript runs slurmd -G from the places Slurm's packages put it
// (scripts/slurmd_gres.sh).
//
//go:embed scripts/slurmd_gres.sh
var slurmdGScript string

// RunSlurmdG runs `slurmd -G` on the host behind t; a failure to run is in
// the result, not an error.
func RunSlurmdG(ctx context.Context, t transport.Transport) SlurmdGRES {
	res, err := t.Run(ctx, transport.Command{Script: nodesh.Script(slurmdGScript, nil)})
	if err != nil {
		return SlurmdGRES{Failure: err.Error()}
	}
	if res.ExitCode != 0 {
		msg := strings.TrimSpace(string(res.Stderr) + string(res.Stdout))
		return SlurmdGRES{Failure: fmt.Sprintf("slurmd -G exited %d: %s", res.ExitCode, msg)}
	}
	g, errs := gres.ParseSlurmdG(string(res.Stdout))
	return SlurmdGRES{GRES: g, Errors: errs}
}

// checkSlurmGRES compares what slurmd detects on an AutoDetect node with
// the numa binds: each bound GPU's device must be there with the Slurm
// core indexes of its NUMA node on this host. slurmd names a GPU by its
// device file, /dev/nvidia<minor>: the GPU the spec declares at a PCI bus
// id is looked up by that id in rep (identified: spec indexes) and its
// file is its minor's, so the GPUs NVML renumbers after one fell off the
// bus keep their own files; a declared GPU NVML does not enumerate is
// not judged here (nvml.gpu_count fails for it). Without NVML's minor
// numbers the file is /dev/nvidia<spec index>, the PCI order the driver
// numbers GPUs in.
func checkSlurmGRES(exp Expectation, rep *nvmlfacts.Report, id gpuIdentity, extra HostFacts) []CheckResult {
	if !exp.SlurmAutodetect || len(exp.NUMANode) == 0 {
		return nil
	}
	var out []CheckResult
	absent := func(idx int) bool {
		if _, ok := id.missing[idx]; !ok {
			return false
		}
		out = append(out, CheckResult{ID: CheckSlurmGRES.GPU(idx), Status: StatusSkip, Message: id.absent(idx)})
		return true
	}
	fail := func(status Status, msg string) []CheckResult {
		for _, idx := range slices.Sorted(maps.Keys(exp.NUMANode)) {
			if !absent(idx) {
				out = append(out, CheckResult{ID: CheckSlurmGRES.GPU(idx), Status: status, Message: msg})
			}
		}
		return out
	}
	deviceFile := func(idx int) string {
		if rep != nil {
			if g := rep.GPUByIndex(idx); g != nil && g.MinorNumber != nil {
				return "/dev/nvidia" + strconv.Itoa(*g.MinorNumber)
			}
		}
		return "/dev/nvidia" + strconv.Itoa(idx)
	}
	switch {
	case extra.Slurmd == nil:
		return fail(StatusError, "slurmd -G was not run")
	case extra.Slurmd.Failure != "":
		return fail(StatusError, extra.Slurmd.Failure)
	case extra.Facts == nil:
		return fail(StatusError, "the host's NUMA nodes are unknown (no probe facts)")
	}
	cpuCores := 0
	if exp.Spec != nil && exp.Spec.Hardware != nil {
		cpuCores = exp.Spec.Hardware.CPUCores
	}
	cores, err := gres.SlurmCores(extra.Facts.NUMA, cpuCores)
	if err != nil {
		return fail(StatusError, err.Error())
	}
	byFile := map[string]gres.Detected{}
	for _, d := range extra.Slurmd.GRES {
		if d.Name == "gpu" {
			byFile[d.File] = d
		}
	}
	for _, idx := range slices.Sorted(maps.Keys(exp.NUMANode)) {
		if absent(idx) {
			continue
		}
		node := exp.NUMANode[idx]
		file := deviceFile(idx)
		want, ok := cores[node]
		r := CheckResult{ID: CheckSlurmGRES.GPU(idx), Expected: fmt.Sprintf("%s Cores=%s (NUMA node %d)", file, want, node)}
		d, found := byFile[file]
		switch {
		case !ok:
			r.Status, r.Message = StatusError, fmt.Sprintf("the host has no NUMA node %d with CPUs", node)
		case !found:
			r.Status = StatusFail
			r.Observed = "absent"
			r.Message = fmt.Sprintf("slurmd detects no GPU with File=%s", file)
			if len(extra.Slurmd.Errors) > 0 {
				r.Message += ": " + strings.Join(extra.Slurmd.Errors, "; ")
			}
		default:
			r.Observed = fmt.Sprintf("%s Cores=%s", d.File, d.Cores)
			r.Status = StatusPass
			if len(cores) > 1 && d.Cores != want {
				r.Status = StatusFail
				r.Message = fmt.Sprintf("slurmd ties %s to cores %q, the spec binds GPU %d to NUMA node %d (Slurm cores %s): srun --gpu-bind=closest would place its tasks elsewhere", file, d.Cores, idx, node, want)
			}
		}
		out = append(out, r)
	}
	return out
}
