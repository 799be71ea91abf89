# gpuform/a100-pcie-4gpu: 4x A100 80GB PCIe with NVLink bridges joining the GPUs
# in pairs, as rented from Azure (Standard_NC96ads_A100_v4: 96 vCPUs on 2 AMD
# EPYC 7V13 sockets, 880 GiB RAM, 4 NUMA nodes, one GPU per NUMA node, 100 Gb/s
# accelerated-networking Ethernet, no RDMA fabric).
#
# Sources:
#   [TOPO]  Azure's NCCL topology file for this VM size: four A100 80GB PCIe (PCI device
#           0x20b5), one per NUMA node 0-3 (24 vCPUs each), at 0001:00:00.0, 0002:00:00.0,
#           0003:00:00.0, 0004:00:00.0, each with a 12-link NVLink connection; eth0 at
#           100 Gb/s with gdr="0" (no GPUDirect RDMA):
#           https://github.com/Azure/azhpc-images/blob/99f85d3bb142ff83d6e77eda72614ff9c6fbe201/topology/ncv4-topo.xml
#   [SIZE]  NC96ads_A100_v4: 96 vCPUs, 880 GB RAM, 4 GPUs (Azure VM size list, as mirrored in
#           the Aspire AKS VM-size catalogue):
#           https://github.com/microsoft/aspire/blob/5bd693ae1897dee5e2ce71c2cc08879c1c7eff51/src/Aspire.Hosting.Azure.Kubernetes/AksNodeVmSizes.cs
#   [CPU]   Azure's MLPerf Inference v3.0 system definition of this VM: 2x "AMD EPYC 7V13
#           64-Core Processor" with 48 cores each exposed, 908 GB host memory as the OS
#           reports it, A100 80GB PCIe (PCI id 0x20B510DE, 300 W):
#           https://github.com/mlcommons/inference_results_v3.0/blob/dad59af09e9e62eceec4bee48794e201d6cf9170/closed/Azure/code/common/systems/custom_list.py
#   [NHC]   Azure HPC health checks for this size check NVLink status and set an all_reduce
#           floor of 25 GB/s on 4 GPUs (reference nccl-thresholds.tsv):
#           https://github.com/Azure/azurehpc-health-checks/blob/0e0a1ac26a64b32ac4dd7632a529638505d3314a/conf/nc96ads_a100_v4.conf
#
# An NVLink bridge joins two A100 PCIe cards (gpu-models.tsv row "A100 PCIe
# 80GB": "NVLink bridge for 2 GPUs"), so each GPU reaches one peer over NVLink:
# nvlink_domain = 2. Which two GPUs share a bridge is not stated in [TOPO]. The
# hypervisor hides the PCIe tree, so no switch is declared.

output "hardware" {
  description = "Topology of one 4x A100 PCIe (NVLink-bridged pairs) node, Azure NC96ads A100 v4 layout."
  value = {
    name          = "4x A100 80GB PCIe, NVLink bridge pairs (Azure NC96ads A100 v4)"
    gpu_model     = "A100 PCIe 80GB"
    gpu_count     = 4
    interconnect  = "nvlink_bridge" # 12 NVLinks per GPU over bridges [TOPO]
    nvlink_domain = 2
    cpu_sockets   = 2        # [CPU]
    numa_nodes    = 4        # [TOPO]
    memory        = "880GiB" # Azure size [SIZE]; the OS sees ~908 GB [CPU]

    gpus = [
      { index = 0, pci = "0001:00:00.0", numa = 0, switch = "" },
      { index = 1, pci = "0002:00:00.0", numa = 1, switch = "" },
      { index = 2, pci = "0003:00:00.0", numa = 2, switch = "" },
      { index = 3, pci = "0004:00:00.0", numa = 3, switch = "" },
    ]

    # Accelerated networking VF; its PCI address is assigned per VM, so none is declared.
    nics = [
      { name = "eth0", netdev = "eth0", pci = "", numa = 0, switch = "", link = "ethernet", speed_gbps = 100, rdma = false },
    ]
  }
}

output "numa_binds" {
  description = "GPU indexes per NUMA node, for numa.bind blocks."
  value = [
    { node = 0, gpus = [0] },
    { node = 1, gpus = [1] },
    { node = 2, gpus = [2] },
    { node = 3, gpus = [3] },
  ]
}
