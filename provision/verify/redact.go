package verify

import (
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
	"github.com/gpuform/gpuform/spec"
)

// RedactNVML is a copy of rep fit for reports that print the node's raw
// facts (Prometheus' gpuform_gpu_info labels the driver version): when the
// spec's driver version is sensitive, the driver the node runs is hidden,
// since it matches the secret whenever the node is right; NVML's own
// version carries the driver version too ("12.535.183.06"). Other strings
// pass through exp's Redactor.
func RedactNVML(exp Expectation, rep *nvmlfacts.Report) *nvmlfacts.Report {
	if rep == nil {
		return nil
	}
	out := *rep
	if exp.Sensitive[string(CheckDriverVersion)] {
		out.DriverVersion = spec.Redacted
		if out.NVMLVersion != "" {
			out.NVMLVersion = spec.Redacted
		}
	}
	out.DriverVersion = exp.Redactor.Redact(out.DriverVersion)
	out.CUDADriverVersion = exp.Redactor.Redact(out.CUDADriverVersion)
	out.NVMLVersion = exp.Redactor.Redact(out.NVMLVersion)
	if rep.GPUs != nil {
		out.GPUs = append(out.GPUs[:0:0], rep.GPUs...)
		for i := range out.GPUs {
			out.GPUs[i].Name = exp.Redactor.Redact(out.GPUs[i].Name)
		}
	}
	return &out
}
