package lint

// TEMPORARY: replaced by the lint/compat adapter once compat compiles.

import "fmt"

type kbFact struct {
	status  int // 4 confirmed
	source  string
	ok      bool
	statusS string
}

func (f kbFact) severity(max Severity) Severity {
	if f.status >= 3 {
		return max
	}
	return min(max, Warning)
}

func (f kbFact) cite() string {
	if f.status >= 3 {
		return f.source
	}
	return fmt.Sprintf("%s; %s in gpuform's knowledge base, so this is not an error", f.source, f.statusS)
}

func (f kbFact) caveat() string {
	if f.status >= 3 {
		return ""
	}
	return fmt.Sprintf("(This rests on %s data in gpuform's knowledge base: %s.)", f.statusS, f.source)
}

func kbShmFloor() (uint64, kbFact) {
	return 1 << 30, kbFact{status: 4, source: "https://github.com/NVIDIA/nccl/blob/5067397c2676d5aed50042fc39e5c8ee96eb0027/docs/userguide/source/troubleshooting/runtime_and_mpi_issues.rst"}
}
func kbDockerShmDefault() (uint64, kbFact) {
	return 64 << 20, kbFact{status: 4, source: "https://github.com/docker/cli/blob/28f756087eea5fa301f3fbf12b01ae62f91521c2/man/docker-run.1.md"}
}
func kbNGCStack() (uint64, kbFact) {
	return 67108864, kbFact{status: 4, source: "https://github.com/awslabs/benchmark-ai/issues/17"}
}
func kbNCCLStackUnlimited() kbFact {
	return kbFact{status: 4, source: "https://github.com/NVIDIA/nccl/blob/5067397c2676d5aed50042fc39e5c8ee96eb0027/docs/userguide/source/troubleshooting/runtime_and_mpi_issues.rst"}
}
func kbNUMABalancing() kbFact {
	return kbFact{status: 1, statusS: "unconfirmed", source: "x"}
}
func kbIOMMU() kbFact {
	return kbFact{status: 4, source: "https://docs.nvidia.com/maxine/triton/latest/Appendicies/PCIeMultiGPUSystems.html"}
}

func nccLAdjustsStack(v interface{}) bool { return false }
