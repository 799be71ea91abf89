# Fixture for lint rule workload_memory (fires case): an HGX H100 node that is correct
# except for what this rule is about.
module "hgx" { source = "gpuform/hgx-h100-8gpu" }

node "train" {
  hosts    = ["gpu001.example.com"]
  hardware = module.hgx.hardware

  # Llama 3.1 405B served in BF16 on one 8-GPU node: 810 GB of weights do
  # not fit in 640 GB (Meta quantized to FP8 to serve it on a single node).
  workload "llama-405b-bf16" {
    parameters      = "405B"
    precision       = "bf16"
    optimizer       = "none"
    tensor_parallel = 8
  }

  # 7B trained with AdamW and no sharding on one GPU each: 112 GB of states.
  workload "dp-only-7b" {
    parameters    = "7B"
    data_parallel = 8
  }

  # 36B with FSDP over 8 GPUs: 72 GB of model states per GPU of 80 (90 %).
  workload "tight" {
    parameters    = "36B"
    zero_stage    = 3
    data_parallel = 8
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
    nccl_test "allreduce" {
      command        = "all_reduce_perf -b 8 -e 8G -f 2 -g 8"
      min_busbw_gbps = 400
    }
  }
}
