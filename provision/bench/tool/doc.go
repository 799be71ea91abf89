// Package tool knows the measurement programs gpuform bench runs on a node:
// NVIDIA nvbandwidth (GPU memory, GPU↔GPU and host↔GPU copies), perftest's
// ib_write_bw (RDMA write bandwidth per NIC) and fio (storage throughput).
// For each it gives the command line that makes the output parseable and a
// parser for that output, every layout the tools have printed in the
// versions users run (nvbandwidth v0.2 to v0.10 and its JSON, perftest's
// MB/sec, MiB/sec and Gb/sec reports, fio 2.x and 3.x JSON).
//
// nccl-tests output (all_reduce_perf) is read by provision/verify/nccltest;
// this package only names the program and the package that provides it.
//
// Package tool does not run anything, does not know what a node should
// deliver and judges nothing: the bench engine (provision/bench) runs the
// commands over a transport, compares the parsed numbers with the knowledge
// base and names the bottleneck. A parser returns an error, never a panic,
// for garbage, truncated output and the tools' own error messages.
package tool
