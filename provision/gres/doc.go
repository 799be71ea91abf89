// Package gres renders the lines of a node's Slurm gres.conf from its spec
// (the hardware description, the numa binds, the slurm block) and the
// host's NUMA layout: one Name=gpu line per GPU with its device file, the
// Slurm core indexes of its NUMA node and its NVLinks to the other GPUs,
// or AutoDetect=nvml. It is not the resource that writes the file
// (provision/resource), and it never reads a host itself.
package gres
