package spec

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
)

// UnknownGPUModelSummary is the summary of the error for a gpu_model the
// knowledge base does not list.
const UnknownGPUModelSummary = "Unknown GPU model"

// GPUModelTable is the knowledge base's GPU model table as the loader needs
// it: whether a name is known, and the names to suggest for one that is not.
// cmd fills it from kb, which imports spec and so cannot be
// imported here.
type GPUModelTable struct {
	// Known reports whether name is a model, an alias or a family name of
	// the table ("H100 SXM5 80GB", "NVIDIA H100 80GB HBM3", "H100").
	Known func(name string) bool
	// Names are the model names to suggest, as the table writes them.
	Names []string
	// Source names the table in messages (a path in the repository).
	Source string
}

// checkGPUModels refuses a gpu_model that is not in the table: a mistyped
// model passed validate and left lint unable to check the driver, CUDA and
// NVLink requirements of the GPU (issue 30).
func checkGPUModels(cfg *Config, table *GPUModelTable) hcl.Diagnostics {
	if table == nil || table.Known == nil {
		return nil
	}
	var diags hcl.Diagnostics
	seen := map[hcl.Range]bool{}
	names := make([]string, 0, len(cfg.Nodes))
	byName := map[string]*Node{}
	for _, n := range cfg.Nodes {
		names = append(names, n.Name)
		byName[n.Name] = n
	}
	sort.Strings(names)
	for _, name := range names {
		hw := byName[name].Hardware
		if hw == nil || hw.GPUModel == "" || hw.GPUModelUnknownOK || table.Known(hw.GPUModel) {
			continue
		}
		// One hardware value shared by several nodes (a module output)
		// is one mistake, said once.
		if seen[hw.GPUModelRange] {
			continue
		}
		seen[hw.GPUModelRange] = true
		// Only the nearest: model names differ in one or two characters
		// (SXM4 80GB, SXM4 40GB), so the runners-up are other GPUs.
		suggest := ""
		if near := nearestNames(hw.GPUModel, table.Names); len(near) > 0 {
			suggest = fmt.Sprintf(" Did you mean %q?", near[0])
		}
		source := table.Source
		if source == "" {
			source = "the knowledge base"
		}
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  UnknownGPUModelSummary,
			Detail: fmt.Sprintf("hardware.gpu_model %q is not a model of %s, so gpuform cannot check this GPU's driver, CUDA and NVLink requirements.%s For hardware newer than the tables, write gpu_model_unknown_ok = true beside gpu_model.",
				hw.GPUModel, source, suggest),
			Subject: hw.GPUModelRange.Ptr(),
		})
	}
	return diags
}
