# Fixture for lint rule pyxis_enroot_version (clean case): an HGX H100 node that is correct
# except for what this rule is about.
module "hgx" { source = "gpuform/hgx-h100-8gpu" }

node "train" {
  hosts    = ["gpu001.example.com"]
  hardware = module.hgx.hardware

  driver {
    version          = "580.95.05"
    kernel_module    = "open"
    persistence_mode = true
    fabric_manager   = true
    peermem          = true
  }
  cuda { version = "12.8.1" }
  nccl { version = "2.25.1" }
  container {
    runtime                  = "enroot"
    nvidia_container_toolkit = "1.17.8"
    enroot_version           = "4.1.2"
    pyxis_version            = "0.24.0"
  }
  shm { size = "50%" }
  numa {
    balancing = false
    bind {
      gpus = [0, 1, 2, 3]
      node = 0
    }
    bind {
      gpus = [4, 5, 6, 7]
      node = 1
    }
  }
  affinity {
    gpu_nic = {
      0 = "mlx5_0", 1 = "mlx5_3", 2 = "mlx5_4", 3 = "mlx5_5",
      4 = "mlx5_6", 5 = "mlx5_9", 6 = "mlx5_10", 7 = "mlx5_11",
    }
    nccl_env = true
  }
  kernel_args = ["iommu=pt"]
  verify {
    nvml {
      gpus = 8
    }
    nccl_test "allreduce" {
      command        = "all_reduce_perf -b 8 -e 8G -f 2 -g 8"
      min_busbw_gbps = 400
    }
  }
}

node "old" {
  hosts    = ["gpu002.example.com"]
  hardware = module.hgx.hardware
  container {
    runtime                  = "enroot"
    nvidia_container_toolkit = "1.17.8"
    enroot_version           = "3.1"
    pyxis_version            = "0.24.0"
  }
}
