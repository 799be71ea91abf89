# gpuform/gb300-nvl72-tray: one compute tray of an NVIDIA GB300 NVL72 rack: two
# GB300 superchips (a Grace CPU joined by NVLink-C2C to two Blackwell Ultra
# GPUs each), so 4 GPUs per tray and 18 trays sharing one NVLink domain of 72
# GPUs. aarch64.
#
# Sources:
#   [AICR]   NVIDIA AICR integrator guide, "NVKE GB300 Setup": bare-metal GB300
#            NVL72 trays on the arm64 -nvidia-64k kernel, four GPUs per tray:
#            https://docs.nvidia.com/aicr/integrator-guide/nvke-gb-300-setup
#   [BCM]    NVIDIA Mission Control / BCM NVLink chapter: GB300 uses 5th-generation
#            NVLink through NVLink Switch trays like GB200:
#            https://docs.nvidia.com/base-command-manager/product-manuals/nvidia-mission-control/nvlinkinfo
#   [CX8]    ConnectX-8 SuperNIC firmware release notes: 800 Gb/s XDR InfiniBand,
#            a direct NIC-GPU data path for Grace systems:
#            https://docs.nvidia.com/networking/display/connectx8firmwarev40440208/changes+and+new+features
#   [MODEL]  gpuform GPU table (gpu-models.tsv): "GB300 (NVL72)", Blackwell, CC 10.3,
#            288 GB HBM3e (secondary), open kernel modules required.
#   [DOMAIN] kb/data/nvlink-domains.tsv: 18 trays x 4 GPUs, IMEX on every tray.
#
# Modelled, not captured: the Grace layout (two 72-core Grace CPUs, GPUs 0-1 on
# NUMA 0 and 2-3 on NUMA 1, 34 NUMA nodes) is taken from the GB200 tray
# (gpuform/gb200-nvl72-tray [TOPO]), which GB300 shares the superchip layout
# with; the LPDDR5X size; one 800G ConnectX-8 per GPU [CX8] with its NUMA node.
# GPU and NIC PCI addresses are not public and left "".

variable "memory" {
  type        = string
  default     = "1.87TB"
  description = "LPDDR5X of the tray's two Grace CPUs (modelled on the GB200 tray)."
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
    { name = "mlx5_0", netdev = "ibP0p3s0", pci = "", numa = 0, switch = "", link = "infiniband", speed_gbps = 800, rdma = true },
    { name = "mlx5_1", netdev = "ibP2p3s0", pci = "", numa = 0, switch = "", link = "infiniband", speed_gbps = 800, rdma = true },
    { name = "mlx5_2", netdev = "ibP16p3s0", pci = "", numa = 1, switch = "", link = "infiniband", speed_gbps = 800, rdma = true },
    { name = "mlx5_3", netdev = "ibP18p3s0", pci = "", numa = 1, switch = "", link = "infiniband", speed_gbps = 800, rdma = true },
  ]
  description = "Compute NICs of the tray (default: four 800G ConnectX-8 rails, two per Grace)."
}

output "hardware" {
  description = "Topology of one GB300 NVL72 compute tray."
  value = {
    name          = "GB300 NVL72 compute tray (4 GPUs, 2 Grace)"
    gpu_model     = "GB300"
    gpu_count     = 4
    interconnect  = "nvswitch" # NVLink Switch trays [BCM]
    nvlink_domain = 72         # [DOMAIN]
    cpu_sockets   = 2
    cpu_cores     = 144 # modelled on the GB200 tray
    numa_nodes    = 34  # modelled on the GB200 tray
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
  description = "GPU indexes per Grace NUMA node, for numa.bind blocks."
  value = [
    { node = 0, gpus = [0, 1] },
    { node = 1, gpus = [2, 3] },
  ]
}

output "nvlink_domain_size" {
  description = "GPUs in the rack's NVLink domain; trays per domain = this / 4."
  value       = 72
}
