// Package bench measures the bandwidth layers of GPU nodes and names the
// weakest: device memory (hbm), GPU to GPU (gpu_gpu: peer copies and
// single-node all_reduce), host to GPU (host_gpu, bound to the GPU's own
// NUMA node and, for contrast, another), node to node (network: RDMA write
// bandwidth per NIC) and storage (fio on the spec's paths); it also runs
// the scaling curve (all_reduce, and the spec's workload, at 1, 2, 4, 8
// GPUs). Each measurement is compared with what the hardware should carry,
// from the knowledge base (kb) and the host's facts, with the
// source of the figure and whether it is a peak or an achievable one.
//
// Package bench is not the tools' parsers or argument lists (those are
// provision/bench/tool, tested over real captures), not verify's floors
// (verify passes or fails a host; bench explains where bandwidth goes), and
// not rendering: the CLI draws the table, the JSON and the chart from the
// Report this package returns.
package bench
