# gpuform/gb200-nvl72-tray: one compute tray of an NVIDIA GB200 NVL72 rack: two
# GB200 superchips, each a 72-core Grace CPU joined by NVLink-C2C to two
# Blackwell GPUs, so 4 GPUs and 144 Arm cores per tray. The rack's 18 trays
# share one NVLink domain of 72 GPUs through its NVLink Switch trays, so
# nvlink_domain is 72, not 4. aarch64.
#
# Sources:
#   [MLPERF] Crusoe's MLPerf Inference v6.1 system description of a GB200 NVL72:
#            4 GPUs per node ("NVIDIA GB200", 186 GB HBM3e), 144 Grace cores,
#            1.87 TB LPDDR5X per 4-GPU node, NVLink-C2C to the host, NV18 between
#            the node's GPUs through the NVLink Switches, 4 ConnectX-7 class NICs:
#            https://github.com/mlcommons/inference_results_v6.1/blob/main/closed/Crusoe/systems/GB200-NVL72_GB200-186GB_aarch64x16_Dynamo.json
#   [TOPO]   `nvidia-smi topo -m` of a GB200 tray: GPU0/1 CPU affinity 0-71 NUMA 0,
#            GPU2/3 72-143 NUMA 1, NV18 between all four, every NIC SYS:
#            https://github.com/NVIDIA/k8s-test-infra/issues/371 and
#            https://github.com/sgl-project/sglang/issues/11208 (GPU NUMA IDs 2, 10,
#            18, 26: each GPU's memory is its own NUMA node, with 7 more per GPU for
#            MIG, so Linux shows 2 + 4 x 8 = 34 NUMA nodes)
#   [DOMAIN] 18 trays x 4 GPUs = 72 GPUs in one NVLink domain; IMEX runs on each
#            tray: kb/data/nvlink-domains.tsv (NVIDIA IMEX guide, NVIDIA Mission
#            Control NVLink chapter): https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/
#   [MODEL]  gpuform GPU table (gpu-models.tsv): "GB200 (NVL72 / NVL4)", Blackwell,
#            CC 10.0, open kernel modules required.
#
# Not public: the GPUs' PCI addresses (left "", as the README says a module
# does when a fact is not public) and which Grace each NIC hangs off. The
# compute NICs are an input; the default is the four 400G rails [MLPERF] with
# two per Grace (NUMA placement modelled, not captured), names as mlx5_N.

variable "memory" {
  type        = string
  default     = "1.87TB"
  description = "LPDDR5X of the tray's two Grace CPUs [MLPERF: 1.87 TB per 4-GPU node]."
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
  default = [
    { name = "mlx5_0", netdev = "ibP0p3s0", pci = "", numa = 0, switch = "", link = "infiniband", speed_gbps = 400, rdma = true },
    { name = "mlx5_1", netdev = "ibP2p3s0", pci = "", numa = 0, switch = "", link = "infiniband", speed_gbps = 400, rdma = true },
    { name = "mlx5_2", netdev = "ibP16p3s0", pci = "", numa = 1, switch = "", link = "infiniband", speed_gbps = 400, rdma = true },
    { name = "mlx5_3", netdev = "ibP18p3s0", pci = "", numa = 1, switch = "", link = "infiniband", speed_gbps = 400, rdma = true },
  ]
  description = "Compute NICs of the tray (default: four 400G InfiniBand rails, two per Grace)."
}

output "hardware" {
  description = "Topology of one GB200 NVL72 compute tray."
  value = {
    name          = "GB200 NVL72 compute tray (4 GPUs, 2 Grace)"
    gpu_model     = "GB200"
    gpu_count     = 4
    interconnect  = "nvswitch" # NVLink Switch trays of the rack [TOPO: NV18]
    nvlink_domain = 72         # [DOMAIN]: the rack, not the tray
    cpu_sockets   = 2
    cpu_cores     = 144 # [MLPERF]
    numa_nodes    = 34  # [TOPO]
    memory        = var.memory

    gpus = [
      { index = 0, pci = "", numa = 0, switch = "" },
      { index = 1, pci = "", numa = 0, switch = "" },
      { index = 2, pci = "", numa = 1, switch = "" },
      { index = 3, pci = "", numa = 1, switch = "" },
    ]
    nics = var.nics
  }
}

output "numa_binds" {
  description = "GPU indexes per Grace NUMA node, for numa.bind blocks [TOPO]."
  value = [
    { node = 0, gpus = [0, 1] },
    { node = 1, gpus = [2, 3] },
  ]
}

output "nvlink_domain_size" {
  description = "GPUs in the rack's NVLink domain; trays per domain = this / 4."
  value       = 72
}
