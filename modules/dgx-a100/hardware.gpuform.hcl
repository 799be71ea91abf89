# gpuform/dgx-a100: NVIDIA DGX A100. 8x A100 SXM4 on 6 NVSwitch chips, 2x AMD
# EPYC 7742 (NPS4: 8 NUMA nodes), four PCIe Gen4 switch complexes each holding
# two GPUs and two single-port ConnectX-6 HDR 200 Gb/s compute NICs.
#
# Sources:
#   [UG]    NVIDIA DGX A100 User Guide (network ports, system specifications):
#           https://docs.nvidia.com/dgx/dgxa100-user-guide/
#   [BIT]   NVIDIA/deepops DGX A100 system config used by its HPL burn-in test:
#           UCX_AFFINITY="mlx5_0:mlx5_1:mlx5_2:mlx5_3:mlx5_6:mlx5_7:mlx5_8:mlx5_9" (GPU 0..7),
#           MEM_AFFINITY="2:3:0:1:6:7:4:5":
#           https://github.com/NVIDIA/deepops/blob/master/workloads/bit/syscfg-dgxa100-80gb.sh
#   [TOPO]  nvidia-smi topo -m of a DGX A100 (public notes): NV12 between all GPUs;
#           GPU0,1 -> mlx5_0,1 PXB, NUMA 3, CPUs 48-63,176-191; GPU2,3 -> mlx5_2,3, NUMA 1,
#           CPUs 16-31,144-159; GPU4,5 -> mlx5_6,7, NUMA 7, CPUs 112-127,240-255;
#           GPU6,7 -> mlx5_8,9, NUMA 5, CPUs 80-95,208-223. The GPU0/GPU1 rows are also in
#           https://github.com/rapidsai/dask-cuda/issues/1358
#   [XML]   NCCL topology dump of a DGX A100 (NVIDIA/nccl issue 1505): GPU0 at 0000:07:00.0,
#           mlx5_0 (200 Gb/s) at 0000:0c:00.0 under the same Broadcom PCIe switch tree,
#           NVSwitches at c4-c9: https://github.com/NVIDIA/nccl/issues/1505
#   [BUS]   GPU bus ids of a DGX A100 (Paderborn Noctua 2 "n2dgx" nodes) in the ClusterCockpit
#           metric collector docs: 07, 0F, 47, 4E, 87, 90, B7, BD.
#   [IFACE] RAPIDS tpcx-bb launcher for DGX A100: GPU i uses mlx5_{0,1,2,3,6,7,8,9} and the
#           interfaces ibp12s0, ibp18s0, ibp75s0, ibp84s0, ibp141s0, ibp148s0, ibp186s0,
#           ibp204s0 (netdev names carry the NIC's PCI bus in decimal: 12 = 0x0c, 204 = 0xcc).
#
# Only the 8 compute HCAs are listed; the storage ConnectX-6 ports (mlx5_4/5,
# mlx5_10/11) carry no GPU traffic.

variable "gpu_memory_gb" {
  type        = number
  default     = 80
  description = "DGX A100 shipped with 40 GB (320 GB system) or 80 GB (640 GB system) GPUs."

  validation {
    condition     = contains([40, 80], var.gpu_memory_gb)
    error_message = "The gpu_memory_gb must be 40 or 80."
  }
}

locals {
  gpu_model = var.gpu_memory_gb == 80 ? "A100 SXM4 80GB" : "A100 SXM4 40GB"
  # DGX A100 320GB ships with 1 TB of system memory, DGX A100 640GB with 2 TB [UG].
  memory = var.gpu_memory_gb == 80 ? "2TiB" : "1TiB"
  # 200 Gb/s HDR ConnectX-6 compute ports [UG][XML: speed="200000"].
  speed = 200
}

output "hardware" {
  description = "Topology of one DGX A100 node."
  value = {
    name          = "DGX A100"
    gpu_model     = local.gpu_model
    gpu_count     = 8
    interconnect  = "nvswitch" # 6 NVSwitch chips [UG]; NV12 between all pairs [TOPO]
    nvlink_domain = 8
    cpu_sockets   = 2 # 2x AMD EPYC 7742 [UG]
    numa_nodes    = 8 # NPS4: four NUMA nodes per socket [TOPO: nodes 1, 3, 5, 7 hold GPUs]
    memory        = local.memory

    # Two GPUs and two HCAs per PCIe switch complex [TOPO: PXB within each group].
    gpus = [
      { index = 0, pci = "0000:07:00.0", numa = 3, switch = "pcie-sw0" },
      { index = 1, pci = "0000:0f:00.0", numa = 3, switch = "pcie-sw0" },
      { index = 2, pci = "0000:47:00.0", numa = 1, switch = "pcie-sw1" },
      { index = 3, pci = "0000:4e:00.0", numa = 1, switch = "pcie-sw1" },
      { index = 4, pci = "0000:87:00.0", numa = 7, switch = "pcie-sw2" },
      { index = 5, pci = "0000:90:00.0", numa = 7, switch = "pcie-sw2" },
      { index = 6, pci = "0000:b7:00.0", numa = 5, switch = "pcie-sw3" },
      { index = 7, pci = "0000:bd:00.0", numa = 5, switch = "pcie-sw3" },
    ]

    nics = [
      { name = "mlx5_0", netdev = "ibp12s0", pci = "0000:0c:00.0", numa = 3, switch = "pcie-sw0", link = "infiniband", speed_gbps = local.speed, rdma = true },
      { name = "mlx5_1", netdev = "ibp18s0", pci = "0000:12:00.0", numa = 3, switch = "pcie-sw0", link = "infiniband", speed_gbps = local.speed, rdma = true },
      { name = "mlx5_2", netdev = "ibp75s0", pci = "0000:4b:00.0", numa = 1, switch = "pcie-sw1", link = "infiniband", speed_gbps = local.speed, rdma = true },
      { name = "mlx5_3", netdev = "ibp84s0", pci = "0000:54:00.0", numa = 1, switch = "pcie-sw1", link = "infiniband", speed_gbps = local.speed, rdma = true },
      { name = "mlx5_6", netdev = "ibp141s0", pci = "0000:8d:00.0", numa = 7, switch = "pcie-sw2", link = "infiniband", speed_gbps = local.speed, rdma = true },
      { name = "mlx5_7", netdev = "ibp148s0", pci = "0000:94:00.0", numa = 7, switch = "pcie-sw2", link = "infiniband", speed_gbps = local.speed, rdma = true },
      { name = "mlx5_8", netdev = "ibp186s0", pci = "0000:ba:00.0", numa = 5, switch = "pcie-sw3", link = "infiniband", speed_gbps = local.speed, rdma = true },
      { name = "mlx5_9", netdev = "ibp204s0", pci = "0000:cc:00.0", numa = 5, switch = "pcie-sw3", link = "infiniband", speed_gbps = local.speed, rdma = true },
    ]
  }
}

output "gpu_nic" {
  description = "GPU index -> RDMA device, one HCA per GPU within its switch complex [BIT]."
  value = {
    0 = "mlx5_0", 1 = "mlx5_1", 2 = "mlx5_2", 3 = "mlx5_3",
    4 = "mlx5_6", 5 = "mlx5_7", 6 = "mlx5_8", 7 = "mlx5_9",
  }
}

output "nccl_ib_hca" {
  description = "The compute HCAs, for affinity.nccl_ib_hca (storage HCAs excluded)."
  value       = ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]
}

output "numa_binds" {
  description = "GPU indexes per NUMA node, for numa.bind blocks."
  value = [
    { node = 3, gpus = [0, 1] },
    { node = 1, gpus = [2, 3] },
    { node = 7, gpus = [4, 5] },
    { node = 5, gpus = [6, 7] },
  ]
}
