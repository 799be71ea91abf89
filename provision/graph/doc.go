// Package graph draws the topology of one node: CPU sockets and NUMA nodes,
// PCIe root ports and switches, GPUs, NVLink and NVSwitch, and NICs, with
// the problems that slow a job marked on the picture (a PCIe link below its
// maximum, a GPU–NIC pair across sockets, a NUMA bind that disagrees with
// the hardware, a declared device that is absent). A Topology is built from
// facts read on a host (FromFacts) or from a spec's hardware value
// (FromSpec) and written as a `nvidia-smi topo -m`-style matrix and tree
// (WriteText), as Graphviz DOT (WriteDOT), or drawn (WriteSVG, WritePNG):
// nested boxes as lstopo (hwloc) draws a machine, CPU socket ⊃ NUMA node ⊃
// PCIe root port and switches ⊃ devices, GPUs in index order, NVLink as one
// band, problems numbered in red on their boxes and listed under a legend.
// The drawing is one layout (layout.go) written as SVG by hand or
// rasterised by gonum's vg, and sized so that a picture fits a 1600 × 1000
// pixel screen with no text under 11 px (checkPictures in the tests checks every golden).
//
// Package graph is not a check: verify judges a node, graph only shows it.
// It reads nothing from a host itself; the caller probes through
// provision/target like every other command.
package graph
