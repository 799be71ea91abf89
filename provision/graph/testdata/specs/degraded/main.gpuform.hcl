# The quickstart node with three mistakes a picture must show:
# - GPU 4 sits on NUMA node 1, but the bind puts it on node 0;
# - GPU 3 is paired with mlx5_9, a NIC on the other socket (SYS);
# - the hardware declares a ninth NIC, mlx5_12, that the host does not have.
# (The simulated host, sim://hgx-h100-stale, also has GPU 3's link at Gen1.)

module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

node "degraded" {
  hosts = ["sim://hgx-h100-stale"]
  hardware = merge(module.hgx.hardware, {
    nics = concat(module.hgx.hardware.nics, [{
      name = "mlx5_12", netdev = "ibp250s0", pci = "0000:fa:00.0", numa = 1,
      link = "infiniband", speed_gbps = 400, rdma = true
    }])
  })

  numa {
    bind {
      gpus = [0, 1, 2, 3, 4]
      node = 0
    }
  }

  affinity {
    gpu_nic = { 0 = "mlx5_0", 1 = "mlx5_3", 2 = "mlx5_4", 3 = "mlx5_9" }
  }
}
