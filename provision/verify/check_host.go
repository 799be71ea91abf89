package verify

func checkHost(exp Expectation, extra HostFacts) []CheckResult {
	var out []CheckResult
	if exp.FabricManager != nil {
		r := boolCheck(string(CheckFabricManager), extra.FabricManagerActive, *exp.FabricManager, "running", "not running")
		if r.Status == StatusSkip {
			r.Status, r.Message = StatusError, "could not tell whether nvidia-fabricmanager runs"
		} else if r.Status == StatusFail && *exp.FabricManager {
			r.Message = "nvidia-fabricmanager is not running: NVSwitch systems cannot run CUDA work without it"
		}
		out = append(out, *r)
	}
	if exp.Peermem != nil {
		r := boolCheck(string(CheckPeermem), extra.PeermemLoaded, *exp.Peermem, "loaded", "not loaded")
		if r.Status == StatusSkip {
			r.Status, r.Message = StatusError, "could not tell whether nvidia-peermem is loaded"
		} else if r.Status == StatusFail && *exp.Peermem {
			r.Message = "nvidia-peermem is not loaded: GPUDirect RDMA is unavailable"
		}
		out = append(out, *r)
	}
	return out
}
