package verify

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// checkNVLinkPairs judges the NVLink expectation on the nvidia-smi
// fallback path, where the per-link state nvml.nvlink reads is not
// available but `nvidia-smi topo -m` prints each GPU pair's bonded link
// count (NV#). One check per GPU, nvml.nvlink_pairs[gpuN]:
//
//   - all_active on an NVSwitch board: every pair shows the node's full
//     count (NV12 on A100, NV18 on H100); a GPU whose every pair shows
//     fewer links has lost links itself, and a single short pair between
//     two otherwise full GPUs fails both ends naming the other;
//   - all_active on NVLink-bridge boards: each GPU's best pair shows the
//     node's full bridge count (a missing bridge lowers it);
//   - all_active otherwise (no hardware block): each GPU reaches at least
//     one other over NVLink, as direct-connect meshes (NV1/NV2 to some
//     peers, PCIe to the rest) legitimately differ per pair;
//   - none: no pair shows NV#.
//
// It runs only where nvml.nvlink is blind (the NVML agent did not run)
// and the topology matrix was read.
func checkNVLinkPairs(exp Expectation, rep *nvmlfacts.Report) []CheckResult {
	if exp.NVLink == NVLinkUnchecked || rep.Collected(nvmlfacts.FactNVLink) || !rep.Collected(nvmlfacts.FactTopology) || len(rep.GPUs) < 2 {
		return nil
	}
	nv := map[int]map[int]int{} // GPU -> peer -> NV#
	full := 0
	for _, p := range rep.GPUTopology {
		for _, e := range [][2]int{{p.A, p.B}, {p.B, p.A}} {
			if nv[e[0]] == nil {
				nv[e[0]] = map[int]int{}
			}
			nv[e[0]][e[1]] = p.NVLinks
		}
		full = max(full, p.NVLinks)
	}
	own := func(g int) int {
		m := 0
		for _, n := range nv[g] {
			m = max(m, n)
		}
		return m
	}
	var out []CheckResult
	for _, g := range rep.GPUs {
		r := CheckResult{ID: CheckNVLinkPairs.GPU(g.Index), Status: StatusPass, Observed: describePairs(nv[g.Index])}
		switch exp.NVLink {
		case NVLinkNone:
			r.Expected = "no NV# to any GPU"
			if own(g.Index) > 0 {
				r.Status, r.Message = StatusFail, "NVLink between GPUs on a node specified as PCIe-only (nvidia-smi topo -m shows NV#)"
			}
		case NVLinkAllActive:
			mine := own(g.Index)
			switch {
			case full == 0:
				r.Expected = "NV# to other GPUs"
				r.Status, r.Message = StatusFail, "nvidia-smi topo -m shows no NVLink between any GPUs of the node (NVLink expected): check the fabric manager and the NVLink state (nvidia-smi nvlink -s)"
			case mine == 0:
				r.Expected = "NV# to other GPUs"
				r.Status, r.Message = StatusFail, "no NVLink from "+g.BusID+" to any other GPU (nvidia-smi topo -m shows only PCIe paths): its NVLinks are down"
			case exp.Interconnect == InterconnectNVSwitch || exp.Interconnect == InterconnectNVLinkBridge:
				r.Expected = fmt.Sprintf("NV%d", full)
				if exp.Interconnect == InterconnectNVSwitch {
					r.Expected += " to every GPU (NVSwitch)"
				} else {
					r.Expected += " to its bridged peer"
				}
				if mine < full {
					r.Status, r.Message = StatusFail, fmt.Sprintf("%s has at most NV%d to any GPU where the node's other GPUs have NV%d: NVLinks of this GPU are down", g.BusID, mine, full)
					break
				}
				if exp.Interconnect != InterconnectNVSwitch {
					break
				}
				var short []string
				for _, p := range rep.GPUs {
					if p.Index != g.Index && nv[g.Index][p.Index] < full && own(p.Index) == full {
						short = append(short, fmt.Sprintf("gpu%d (NV%d)", p.Index, nv[g.Index][p.Index]))
					}
				}
				if len(short) > 0 {
					r.Status, r.Message = StatusFail, fmt.Sprintf("%s reaches %s with fewer than the NV%d its other pairs have", g.BusID, strings.Join(short, ", "), full)
				}
			default:
				r.Expected = "NV# to another GPU"
			}
		}
		out = append(out, r)
	}
	return out
}

// describePairs lists a GPU's pairs grouped by link count:
// "NV12 to gpu1, gpu2; no NVLink to gpu3".
func describePairs(peers map[int]int) string {
	by := map[int][]int{}
	for p, n := range peers {
		by[n] = append(by[n], p)
	}
	counts := make([]int, 0, len(by))
	for n := range by {
		counts = append(counts, n)
	}
	slices.Sort(counts)
	slices.Reverse(counts)
	var parts []string
	for _, n := range counts {
		ids := by[n]
		slices.Sort(ids)
		names := make([]string, len(ids))
		for i, id := range ids {
			names[i] = "gpu" + strconv.Itoa(id)
		}
		if n == 0 {
			parts = append(parts, "no NVLink to "+strings.Join(names, ", "))
		} else {
			parts = append(parts, fmt.Sprintf("NV%d to %s", n, strings.Join(names, ", ")))
		}
	}
	if len(parts) == 0 {
		return "no GPU pair in nvidia-smi topo -m"
	}
	return strings.Join(parts, "; ")
}
