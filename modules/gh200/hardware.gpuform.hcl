# gpuform/gh200: one NVIDIA GH200 Grace Hopper Superchip (a 72-core Arm Neoverse
# V2 Grace CPU and one H100-class Hopper GPU joined by NVLink-C2C), as in a 1U
# single-superchip node. aarch64.
#
# Sources:
#   [SMI]   nvidia-smi on GH200 nodes (many public logs): one "NVIDIA GH200 480GB" at
#           bus id 00000009:01:00.0 with 97871 MiB (96 GB HBM3) of GPU memory; 480 GB
#           is the LPDDR5X on the Grace side.
#   [NUMA]  NVIDIA/mlperf-common PR 16: Linux shows one NUMA node per Grace CPU plus 8
#           per GPU (the GPU memory node and the nodes reserved for MIG), so a single
#           superchip has 1 + 8 = 9 NUMA nodes; the GPU's CPU affinity is node 0:
#           https://github.com/NVIDIA/mlperf-common/pull/16
#   [MODEL] gpuform GPU table (gpu-models.tsv): "GH200 Grace Hopper Superchip", Hopper,
#           CC 9.0, GPU-CPU NVLink-C2C, 96 GB HBM3 and 144 GB HBM3e variants.
#
# NICs differ between GH200 servers (ConnectX-7, BlueField-3, or none), so they
# are an input: pass the node's RDMA devices in `nics` (same object shape as
# every hardware profile).

variable "memory" {
  type        = string
  default     = "480GB"
  description = "Grace LPDDR5X capacity; GH200 shipped with 120, 240 and 480 GB [SMI: 'GH200 480GB']."
}

variable "nics" {
  type = list(object({
    name       = string
    netdev     = string
    pci        = string
    numa       = number
    switch     = string
    link       = string
    speed_gbps = number
    rdma       = bool
  }))
  default     = []
  description = "Network adapters of the node, if any."
}

output "hardware" {
  description = "Topology of a single-GH200 node."
  value = {
    name          = "GH200 Grace Hopper Superchip (1 per node)"
    gpu_model     = "GH200 Grace Hopper Superchip"
    gpu_count     = 1
    interconnect  = "nvlink_c2c" # CPU-GPU NVLink-C2C [MODEL]; no GPU peers
    nvlink_domain = 1
    cpu_sockets   = 1
    numa_nodes    = 9 # [NUMA]
    memory        = var.memory

    gpus = [
      # Domain 0009 is where the GPU of the superchip enumerates [SMI]; its CPU
      # affinity is the Grace NUMA node 0 [NUMA].
      { index = 0, pci = "0009:01:00.0", numa = 0, switch = "" },
    ]
    nics = var.nics
  }
}

output "numa_binds" {
  description = "GPU indexes per NUMA node, for numa.bind blocks."
  value = [
    { node = 0, gpus = [0] },
  ]
}
