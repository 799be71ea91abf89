// Package nvmlfacts is the node side of gpuform's verification: it reads
// what NVML says about every GPU of the machine it runs on (identity, PCI
// placement, NUMA locality, ECC and row-remap health, PCIe link, NVLink,
// topology, temperature, power, throttle reasons, MIG mode, XID events) and
// writes it as one versioned JSON document, the Report.
//
// The hidden `gpuform agent nvml --json` command calls RunAgent on the node;
// the controller decodes the Report and judges it (package provision/verify).
// This package only gathers facts: it never decides whether a value is good.
//
// Collecting needs cgo because github.com/NVIDIA/go-nvml loads
// libnvidia-ml.so.1 at run time. The Report types themselves carry no cgo
// dependency, so a controller built without cgo can still decode a Report
// (and the nvidia-smi fallback in provision/verify/smi can produce one).
package nvmlfacts
