package verify

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// zeroUUID is the cluster UUID of a GPU in no fabric cluster.
const zeroUUID = "00000000-0000-0000-0000-000000000000"

// checkFabric judges nvml.fabric on a rack-scale tray (exp.Fabric): every
// GPU registered with the NVLink fabric (state Completed, status Success),
// with a clique id and cluster UUID that are set and the same on all of
// the host's GPUs. The checks of NVIDIA/k8s-dra-driver-gpu and
// Azure/azhpc-images (#506: State Completed, Status Success, CliqueId
// non-zero, ClusterUUID non-zero) read the same four fields. A source
// that cannot read the fabric (the nvidia-smi fallback) is an error.
func checkFabric(exp Expectation, rep *nvmlfacts.Report) []CheckResult {
	if !exp.Fabric || rep == nil {
		return nil
	}
	r := CheckResult{ID: string(CheckFabric), Expected: "every GPU Completed/Success in one clique and cluster"}
	if !rep.Collected(nvmlfacts.FactFabric) {
		r.Status, r.Message = StatusError, "the NVML source ("+rep.Source+") reports no fabric state"
		return []CheckResult{r}
	}
	var bad []string
	cliques := map[string][]string{}
	var order []string
	for _, g := range rep.GPUs {
		name := fmt.Sprintf("gpu%d (%s)", g.Index, g.BusID)
		f := g.Fabric
		switch {
		case f == nil:
			bad = append(bad, name+" reports no fabric registration")
			continue
		case f.State != "Completed":
			bad = append(bad, fmt.Sprintf("%s fabric state %s", name, f.State))
			continue
		case f.Status != "Success":
			bad = append(bad, fmt.Sprintf("%s fabric status %s", name, f.Status))
			continue
		case f.CliqueID == 0 || f.ClusterUUID == zeroUUID || f.ClusterUUID == "":
			bad = append(bad, fmt.Sprintf("%s in no fabric clique (clique %d, cluster %s)", name, f.CliqueID, f.ClusterUUID))
			continue
		}
		key := fmt.Sprintf("clique %d cluster %s", f.CliqueID, f.ClusterUUID)
		if _, ok := cliques[key]; !ok {
			order = append(order, key)
		}
		cliques[key] = append(cliques[key], fmt.Sprintf("gpu%d", g.Index))
	}
	var seen []string
	for _, k := range order {
		seen = append(seen, k+" ("+strings.Join(cliques[k], ",")+")")
	}
	r.Observed = strings.Join(seen, "; ")
	if len(order) > 1 {
		bad = append(bad, "the host's GPUs are in different fabric cliques: "+r.Observed)
	}
	if len(rep.GPUs) == 0 {
		bad = append(bad, "no GPU reported")
	}
	if len(bad) > 0 {
		r.Status, r.Message = StatusFail, strings.Join(bad, "; ")
	} else {
		r.Status = StatusPass
	}
	return []CheckResult{r}
}
