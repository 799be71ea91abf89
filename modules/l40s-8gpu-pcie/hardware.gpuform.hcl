# gpuform/l40s-8gpu-pcie: an 8-slot PCIe GPU server with 8x NVIDIA L40S, modelled
# on the ASUS ESC8000A-E12 (2x AMD EPYC 9004, every GPU on its own CPU root port,
# no PCIe switch, no NVLink) with two dual-port ConnectX-7 200 GbE adapters, one
# per socket.
#
# Sources:
#   [DUMP]  Public hardware write-up of an ASUS ESC8000A-E12 (2x EPYC 9374F, 4 of its 8
#           double-width slots populated, 2x dual-port ConnectX-7): lspci -tv shows one
#           GPU per root port at 0000:01:00.0 and 0000:41:00.0 (NUMA 0) and 0000:c1:00.0
#           and 0000:e1:00.0 (NUMA 1); ConnectX-7 "200GbE / NDR200, Dual-port QSFP112,
#           PCIe 5.0 x16" at 0000:21:00.0 (NUMA 0) and 0000:81:00.0 (NUMA 1), RDMA devices
#           mlx5_0..mlx5_3; nvidia-smi topo -m shows NODE/SYS only (no PIX/PXB, no NV#);
#           numactl: 2 NUMA nodes, cpus 0-31 / 32-63, ~189 GiB each:
#           https://github.com/luigifcruz/stelline/blob/e09cf85325d4493c47ef381beb541fbda39f79b8/hardware/asus-esc8000a-e12.md
#   [L40S]  NVIDIA L40S: PCIe Gen4 x16, no NVLink (gpuform GPU table, gpu-models.tsv row "L40S").
#   [DA]    Direct-attach dual-EPYC 8-GPU layout: 4 GPUs per socket at x16 each:
#           https://github.com/voipmonitor/rtx6kpro/blob/master/hardware/topology.md
#
# What is NOT public: the PCI addresses of the four slots the write-up left
# empty, so GPU pci addresses are "" (unknown: verify does not match on them) and
# the 4+4 NUMA split is that of a direct-attach dual-socket board [DA]. Fill them
# in from `nvidia-smi --query-gpu=index,pci.bus_id --format=csv` on your box.

variable "memory" {
  type        = string
  default     = "384GiB"
  description = "Installed RAM; the default is the configuration of the public write-up (2 x ~189 GiB usable)."
}

variable "nic_link" {
  type        = string
  default     = "roce"
  description = "Link layer of the ConnectX-7 ports (VPI: Ethernet/RoCE or InfiniBand)."

  validation {
    condition     = contains(["roce", "ethernet", "infiniband"], var.nic_link)
    error_message = "The nic_link must be \"roce\", \"ethernet\" or \"infiniband\"."
  }
}

output "hardware" {
  description = "Topology of one 8x L40S PCIe server (ASUS ESC8000A-E12 layout)."
  value = {
    name          = "8x L40S PCIe (ASUS ESC8000A-E12)"
    gpu_model     = "L40S"
    gpu_count     = 8
    interconnect  = "pcie" # L40S has no NVLink [L40S]
    nvlink_domain = 1
    cpu_sockets   = 2
    numa_nodes    = 2 # [DUMP] numactl --hardware
    memory        = var.memory

    # switch = "": every GPU sits directly on a CPU root port [DUMP][DA]. pci is
    # "" because GPU indexes follow PCI bus order, and with all 8 slots filled the
    # four slots [DUMP] left empty sort in between the observed ones (01, 41 on
    # socket 0; c1, e1 on socket 1), so no index can be tied to an address. Every
    # socket-0 bus sorts before every socket-1 bus on EPYC, so GPUs 0-3 are on
    # NUMA 0 and 4-7 on NUMA 1 whatever the exact addresses.
    gpus = [
      { index = 0, pci = "", numa = 0, switch = "" },
      { index = 1, pci = "", numa = 0, switch = "" },
      { index = 2, pci = "", numa = 0, switch = "" },
      { index = 3, pci = "", numa = 0, switch = "" },
      { index = 4, pci = "", numa = 1, switch = "" },
      { index = 5, pci = "", numa = 1, switch = "" },
      { index = 6, pci = "", numa = 1, switch = "" },
      { index = 7, pci = "", numa = 1, switch = "" },
    ]

    # Two ports per adapter; netdev names were not part of [DUMP] and are left empty.
    nics = [
      { name = "mlx5_0", netdev = "", pci = "0000:21:00.0", numa = 0, switch = "", link = var.nic_link, speed_gbps = 200, rdma = true },
      { name = "mlx5_1", netdev = "", pci = "0000:21:00.1", numa = 0, switch = "", link = var.nic_link, speed_gbps = 200, rdma = true },
      { name = "mlx5_2", netdev = "", pci = "0000:81:00.0", numa = 1, switch = "", link = var.nic_link, speed_gbps = 200, rdma = true },
      { name = "mlx5_3", netdev = "", pci = "0000:81:00.1", numa = 1, switch = "", link = var.nic_link, speed_gbps = 200, rdma = true },
    ]
  }
}

output "numa_binds" {
  description = "GPU indexes per NUMA node, for numa.bind blocks."
  value = [
    { node = 0, gpus = [0, 1, 2, 3] },
    { node = 1, gpus = [4, 5, 6, 7] },
  ]
}
