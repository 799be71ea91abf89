package verify

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// vbiosOf lists the host's GPUs by VBIOS version, versions in first-seen
// order, and the GPUs that report none.
func vbiosOf(rep *nvmlfacts.Report) (order []string, by map[string][]string, none []string) {
	by = map[string][]string{}
	for _, g := range rep.GPUs {
		name := fmt.Sprintf("gpu%d", g.Index)
		if g.VBIOS == "" {
			none = append(none, name)
			continue
		}
		if _, ok := by[g.VBIOS]; !ok {
			order = append(order, g.VBIOS)
		}
		by[g.VBIOS] = append(by[g.VBIOS], name)
	}
	return order, by, none
}

// checkVBIOS judges nvml.vbios when the spec pins firmware { gpu_vbios }:
// every GPU reports exactly that version. A GPU that reports none is an
// error (not a pass); drift between the host's GPUs fails naming each.
func checkVBIOS(exp Expectation, rep *nvmlfacts.Report) []CheckResult {
	if exp.VBIOS == "" || rep == nil {
		return nil
	}
	r := CheckResult{ID: string(CheckVBIOS), Expected: exp.VBIOS}
	order, by, none := vbiosOf(rep)
	var seen []string
	for _, v := range order {
		seen = append(seen, v+" ("+strings.Join(by[v], ",")+")")
	}
	r.Observed = strings.Join(seen, "; ")
	var bad []string
	for _, v := range order {
		if v != exp.VBIOS {
			bad = append(bad, fmt.Sprintf("%s run%s VBIOS %s", strings.Join(by[v], ", "), map[bool]string{true: "s", false: ""}[len(by[v]) == 1], v))
		}
	}
	switch {
	case len(bad) > 0:
		r.Status, r.Message = StatusFail, strings.Join(bad, "; ")+", the spec pins "+exp.VBIOS
	case len(none) > 0 || len(order) == 0:
		r.Status, r.Message = StatusError, "no VBIOS version reported for "+orAll(none)
	default:
		r.Status = StatusPass
	}
	return []CheckResult{r}
}

func orAll(gpus []string) string {
	if len(gpus) == 0 {
		return "any GPU"
	}
	return strings.Join(gpus, ", ")
}

// HostVBIOS is the one VBIOS version all of a host's GPUs report, "" when
// they report none or differ (the runner compares hosts of a domain by it).
func HostVBIOS(rep *nvmlfacts.Report) string {
	if rep == nil {
		return ""
	}
	order, _, none := vbiosOf(rep)
	if len(order) != 1 || len(none) > 0 || slices.Contains(order, "") {
		return ""
	}
	return order[0]
}
