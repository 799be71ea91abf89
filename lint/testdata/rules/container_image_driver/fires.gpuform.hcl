# Fixture for lint rule container_image_driver (fires case): an HGX H100 node that is correct
# except for what this rule is about.
module "hgx" { source = "gpuform/hgx-h100-8gpu" }

node "train" {
  hosts    = ["gpu001.example.com"]
  hardware = module.hgx.hardware

  driver {
    version          = "525.147.05"
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
    images                   = ["nvcr.io/nvidia/pytorch:23.10-py3", "nvcr.io/nvidia/pytorch:25.02-py3", "nvcr.io/nvidia/pytorch:99.01-py3", "nvcr.io/nvidia/pytorch:25.10-py3"]
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

# Triton 25.10's release notes say "driver 575 or later", but the image ships
# CUDA 13, whose own floor is R580: the CUDA floor still applies. The GPU is
# not known, and on a data-center GPU forward compatibility might carry it
# (the exception list of this release is unconfirmed): a warning, not an error.
node "infer" {
  hosts = ["gpu002.example.com"]
  driver { version = "575.57.08" }
  container {
    images = ["nvcr.io/nvidia/tritonserver:25.10-py3"]
  }
}

# On an H100 (data-center GPU) an older driver runs an image only through a
# forward-compatibility exception of its branch. Triton 23.05's list is
# confirmed and names no R520 entry: an error.
node "fwd" {
  hosts    = ["gpu003.example.com"]
  hardware = module.hgx.hardware
  driver { version = "520.61.05" }
  container {
    images = ["nvcr.io/nvidia/tritonserver:23.05-py3"]
  }
}
