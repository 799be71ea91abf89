# Fixture for lint rule nccl_cuda_build (fires case): an HGX H100 node that is correct
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
  # NCCL 2.30.7 is built for CUDA 12.9 and 13.3 only; the 13.3 build wants
  # driver 610.43.02, and 580 meets only 13.x's minor-version-compatibility
  # floor: a warning (NVIDIA/nccl#1093: a newer-minor build works when the
  # driver is recent enough).
  cuda { version = "13.0.2" }
  nccl { version = "2.30.7" }
  container {
    runtime                  = "docker"
    nvidia_container_toolkit = "1.17.8"
    default_shm_size         = "16GiB"
    ulimits                  = { memlock = "unlimited", stack = "64MiB" }
    images                   = ["nvcr.io/nvidia/pytorch:25.02-py3"]
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

node "b" {
  hosts = ["b.example.com"]
  cuda { version = "12.8.1" }
  nccl { version = "2.99.1" }
}

# No build of the same CUDA major at all: an error.
node "old" {
  hosts = ["c.example.com"]
  driver { version = "580.95.05" }
  cuda { version = "11.8.0" }
  nccl { version = "2.30.7" }
}

# A floating driver: lint cannot tell whether it runs the 13.3 build.
node "float" {
  hosts = ["d.example.com"]
  driver { version = "580" }
  cuda { version = "13.0.2" }
  nccl { version = "2.30.7" }
}
