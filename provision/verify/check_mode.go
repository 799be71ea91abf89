package verify

import (
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

func checkPersistence(exp Expectation, g *nvmlfacts.GPU) *CheckResult {
	if exp.PersistenceMode == nil {
		return nil
	}
	return boolCheck(CheckPersistenceMode.GPU(g.Index), g.PersistenceMode, *exp.PersistenceMode, "enabled", "disabled")
}

func checkECCMode(exp Expectation, g *nvmlfacts.GPU) *CheckResult {
	if exp.ECC == nil {
		return nil
	}
	var cur *bool
	if g.ECC != nil {
		cur = &g.ECC.Enabled
	}
	r := boolCheck(CheckECCMode.GPU(g.Index), cur, *exp.ECC, "enabled", "disabled")
	if r.Status == StatusFail && g.ECC != nil && g.ECC.PendingEnabled == *exp.ECC {
		r.Message += " (the change is pending: reboot or reset the GPU)"
	}
	return r
}

func checkMIG(exp Expectation, g *nvmlfacts.GPU) *CheckResult {
	if exp.MIG == nil {
		return nil
	}
	var cur *bool
	if g.MIG != nil {
		cur = &g.MIG.Enabled
	}
	r := boolCheck(CheckMIGMode.GPU(g.Index), cur, *exp.MIG, "enabled", "disabled")
	switch {
	case r.Status == StatusSkip && !*exp.MIG:
		// A GPU without MIG support satisfies "MIG off".
		r.Status, r.Observed, r.Message = StatusPass, "not supported", ""
	case r.Status == StatusSkip:
		// ... and fails "MIG on": NVML reports no MIG mode on GPUs
		// without MIG (a failed query is a warning in nvml.facts).
		r.Status, r.Observed = StatusFail, "not supported"
		r.Message = "the spec wants MIG enabled, but " + g.BusID + " reports no MIG mode (a GPU without MIG support?)"
	case r.Status == StatusFail && *exp.MIG && g.MIG.PendingEnabled:
		r.Message += " (enabling is pending: reset the GPU)"
	}
	return r
}
