# Fixture for lint rule gpu_nic_cross_socket (clean case): a two-socket NPS2 node
# whose GPUs have no NIC on their own NUMA node, only on their socket's other one.
node "train" {
  hosts = ["gpu001.example.com"]
  hardware = {
    name         = "two sockets, NPS2"
    gpu_model    = "H100 PCIe 80GB"
    gpu_count    = 2
    interconnect = "pcie"
    cpu_sockets  = 2
    numa_nodes   = 4
    gpus = [
      { index = 0, pci = "0000:01:00.0", numa = 0 },
      { index = 1, pci = "0000:81:00.0", numa = 2 },
    ]
    # Each socket's NIC sits on its other NUMA node.
    nics = [
      { name = "mlx5_0", netdev = "ibp65s0", pci = "0000:41:00.0", numa = 1, link = "infiniband", speed_gbps = 400, rdma = true },
      { name = "mlx5_1", netdev = "ibp193s0", pci = "0000:c1:00.0", numa = 3, link = "infiniband", speed_gbps = 400, rdma = true },
    ]
  }
  numa {
    balancing = false
    bind {
      gpus = [0]
      node = 0
    }
    bind {
      gpus = [1]
      node = 2
    }
  }
  affinity {
    gpu_nic  = { 0 = "mlx5_0", 1 = "mlx5_1" }
    nccl_env = true
  }
}
