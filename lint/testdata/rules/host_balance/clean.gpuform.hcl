# Fixture for lint rule host_balance (clean case): an HGX H100 node that is correct
# except for what this rule is about: a host with 112 cores, 2 TiB and
# 30.72 TB of NVMe running a training job.
module "hgx" { source = "gpuform/hgx-h100-8gpu" }

node "train" {
  hosts    = ["gpu001.example.com"]
  hardware = merge(module.hgx.hardware, { cpu_cores = 112, memory = "2TiB", nvme = "30.72TB" })

  workload "llama-8b" {
    parameters      = "8B"
    zero_stage      = 3
    tensor_parallel = 1
    data_parallel   = 8
  }

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
  }
}
