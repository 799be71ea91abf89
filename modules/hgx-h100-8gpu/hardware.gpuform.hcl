# gpuform/hgx-h100-8gpu: an HGX H100 8-GPU baseboard as NVIDIA ships it in the
# DGX H100 (and DGX H200, same chassis): 8x H100 SXM5 80GB on 4 NVSwitch chips,
# 2x Xeon Platinum 8480C, 2 TB DDR5, and 8 single-port ConnectX-7 compute NICs,
# one per GPU, each under the same PCIe Gen5 switch as its GPU.
#
# Sources:
#   [UG]   NVIDIA DGX H100/H200 User Guide, "Network Connections, Cables, and
#          Adaptors", Table 6 "Network Modules" (OSFP port -> GPU -> netdev -> RDMA device):
#          https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html
#   [POD]  DGX BasePOD deployment guide, SR-IOV section: the 8 compute ConnectX-7
#          sit at PCI buses 18, 40, 4f, 5e, 9a, c0, ce, dc (mlxconfig -d <bus>:00.0):
#          https://docs.nvidia.com/dgx-basepod/deployment-guide-dgx-basepod/latest/sriov.html
#   [RA]   DGX BasePOD reference architecture, "NVIDIA DGX H200 and H100 Systems":
#          8 GPUs, 4 NVSwitch, 2x Xeon 8480C, 2 TB DDR5, 8x single-port ConnectX-7 up to 400 Gb/s:
#          https://docs.nvidia.com/dgx-basepod/reference-architecture-infrastructure-foundation-enterprise-ai/latest/core-components.html
#   [MLP]  NVIDIA's MLPerf Inference v3.1 system note: "Each H100 GPU in the system is
#          connected to an NVIDIA CX-7 InfiniBand 400 NDR NIC through a PCIe Gen5x16 connection":
#          https://github.com/mlcommons/inference_results_v3.1/blob/main/closed/NVIDIA/documentation/start_from_device/dgx-h100.md
#   [SMI]  nvidia-smi of a DGX H100 (2x Xeon 8480C, driver 535.161.08) in a public system
#          dump lists the GPU bus ids 1B, 43, 52, 61, 9D, C3, D1, DF in GPU order; NVIDIA's
#          bare-metal provisioning code (Carbide, public fork github.com/krish-nvidia/carbide-fork)
#          uses the same eight ids for its 8x "NVIDIA H100 80GB HBM3" test machine.
#   [TOPO] nvidia-smi topo -m / ibdev2netdev of a DGX H200 (same board): GPUs 0-3 on NUMA 0,
#          4-7 on NUMA 1, NV18 between every GPU pair, each GPU's compute HCA at PXB
#          (same PCIe switch), NUMA 0 CPUs 0-55,112-167 and NUMA 1 CPUs 56-111,168-223.
#
# Only the 8 compute NICs are listed. The two dual-port storage/management
# ConnectX-7 cards (mlx5_1/2, mlx5_7/8 on a DGX) carry no GPU traffic and are
# left out so that NIC-pairing checks only see the NICs NCCL should use.
#
# OEM HGX H100 servers (Supermicro, Dell, ...) use the same baseboard but their
# own PCI bus numbering and NIC names; copy this module into your repository and
# edit the addresses for those.

variable "nic_link" {
  type        = string
  default     = "infiniband"
  description = "Link layer of the compute NICs: ConnectX-7 is VPI, so the same ports run InfiniBand NDR or RoCE."

  validation {
    condition     = contains(["infiniband", "roce"], var.nic_link)
    error_message = "The nic_link must be \"infiniband\" or \"roce\"."
  }
}

variable "nic_speed_gbps" {
  type        = number
  default     = 400
  description = "Port speed of each compute NIC in Gb/s (NDR 400, or 200 when run as NDR200)."

  validation {
    condition     = contains([200, 400], var.nic_speed_gbps)
    error_message = "A ConnectX-7 compute port on DGX/HGX H100 runs at 200 or 400 Gb/s."
  }
}

variable "gpu_model" {
  type        = string
  default     = "H100 SXM5 80GB"
  description = "GPU model as named in gpuform's GPU table; the H200 board keeps this topology."

  validation {
    condition     = contains(["H100 SXM5 80GB", "H200 SXM 141GB"], var.gpu_model)
    error_message = "This profile describes the HGX H100/H200 8-GPU board only."
  }
}

locals {
  # NUMA node 0 is CPU socket 0 (CPUs 0-55,112-167), node 1 is socket 1 [TOPO].
  numa0 = 0
  numa1 = 1
}

output "hardware" {
  description = "Topology of one DGX/HGX H100 8-GPU node."
  value = {
    name          = "HGX H100 8-GPU (DGX H100 layout)"
    gpu_model     = var.gpu_model
    gpu_count     = 8
    interconnect  = "nvswitch" # 4 NVSwitch chips [RA]; NV18 between all pairs [TOPO]
    nvlink_domain = 8
    cpu_sockets   = 2      # 2x Xeon Platinum 8480C [RA]
    numa_nodes    = 2      # one per socket [TOPO]
    memory        = "2TiB" # "2 TB of DDR5 system memory" [RA]

    # GPU i and compute NIC i share one PCIe Gen5 switch [MLP][TOPO]; each NIC's
    # bus is 3 below its GPU's (18/1b, 40/43, 4f/52, ...), one switch per pair.
    gpus = [
      { index = 0, pci = "0000:1b:00.0", numa = local.numa0, switch = "pcie-sw0" },
      { index = 1, pci = "0000:43:00.0", numa = local.numa0, switch = "pcie-sw1" },
      { index = 2, pci = "0000:52:00.0", numa = local.numa0, switch = "pcie-sw2" },
      { index = 3, pci = "0000:61:00.0", numa = local.numa0, switch = "pcie-sw3" },
      { index = 4, pci = "0000:9d:00.0", numa = local.numa1, switch = "pcie-sw4" },
      { index = 5, pci = "0000:c3:00.0", numa = local.numa1, switch = "pcie-sw5" },
      { index = 6, pci = "0000:d1:00.0", numa = local.numa1, switch = "pcie-sw6" },
      { index = 7, pci = "0000:df:00.0", numa = local.numa1, switch = "pcie-sw7" },
    ]

    # Names and GPU pairing from [UG] Table 6; bus numbers from [POD] (the ibpNs0
    # netdev names carry the same bus number in decimal: 0x18 = 24, 0xdc = 220).
    nics = [
      { name = "mlx5_0", netdev = "ibp24s0", pci = "0000:18:00.0", numa = local.numa0, switch = "pcie-sw0", link = var.nic_link, speed_gbps = var.nic_speed_gbps, rdma = true },
      { name = "mlx5_3", netdev = "ibp64s0", pci = "0000:40:00.0", numa = local.numa0, switch = "pcie-sw1", link = var.nic_link, speed_gbps = var.nic_speed_gbps, rdma = true },
      { name = "mlx5_4", netdev = "ibp79s0", pci = "0000:4f:00.0", numa = local.numa0, switch = "pcie-sw2", link = var.nic_link, speed_gbps = var.nic_speed_gbps, rdma = true },
      { name = "mlx5_5", netdev = "ibp94s0", pci = "0000:5e:00.0", numa = local.numa0, switch = "pcie-sw3", link = var.nic_link, speed_gbps = var.nic_speed_gbps, rdma = true },
      { name = "mlx5_6", netdev = "ibp154s0", pci = "0000:9a:00.0", numa = local.numa1, switch = "pcie-sw4", link = var.nic_link, speed_gbps = var.nic_speed_gbps, rdma = true },
      { name = "mlx5_9", netdev = "ibp192s0", pci = "0000:c0:00.0", numa = local.numa1, switch = "pcie-sw5", link = var.nic_link, speed_gbps = var.nic_speed_gbps, rdma = true },
      { name = "mlx5_10", netdev = "ibp206s0", pci = "0000:ce:00.0", numa = local.numa1, switch = "pcie-sw6", link = var.nic_link, speed_gbps = var.nic_speed_gbps, rdma = true },
      { name = "mlx5_11", netdev = "ibp220s0", pci = "0000:dc:00.0", numa = local.numa1, switch = "pcie-sw7", link = var.nic_link, speed_gbps = var.nic_speed_gbps, rdma = true },
    ]
  }
}

output "gpu_nic" {
  description = "GPU index -> RDMA device under the same PCIe switch, ready for affinity.gpu_nic."
  value = {
    0 = "mlx5_0", 1 = "mlx5_3", 2 = "mlx5_4", 3 = "mlx5_5",
    4 = "mlx5_6", 5 = "mlx5_9", 6 = "mlx5_10", 7 = "mlx5_11",
  }
}

output "nccl_ib_hca" {
  description = "The compute HCAs, for affinity.nccl_ib_hca (storage HCAs excluded)."
  value       = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
}

output "numa_binds" {
  description = "GPU indexes per NUMA node, for numa.bind blocks."
  value = [
    { node = 0, gpus = [0, 1, 2, 3] },
    { node = 1, gpus = [4, 5, 6, 7] },
  ]
}
