# A 32-node HGX H100 training cluster on InfiniBand, reached through a bastion,
# changed four nodes at a time through Slurm drains.

gpuform {
  required_version = ">= 0.1"
}

module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

module "stack" {
  source = "gpuform/stack-cuda12-8"
}

locals {
  # Every rank of a job runs this image; its CUDA and NCCL match the host stack.
  image = module.stack.pytorch_image
}

inventory "train" {
  hosts  = var.hosts
  user   = var.ssh_user
  port   = 22
  jump   = var.bastion
  become = "sudo"
}

node "train" {
  hosts    = inventory.train
  hardware = module.hgx.hardware

  # What the cluster trains. Lint checks the layout against the hosts' GPUs
  # (8 × 4 × 8 = 256 = 32 hosts × 8), tensor parallelism against the
  # NVSwitch domain, and the model states against each GPU's 80 GB.
  workload "llama-70b" {
    parameters        = "70B"
    precision         = "bf16"
    optimizer         = "adamw"
    zero_stage        = 1 # Megatron's distributed optimizer shards the Adam states
    tensor_parallel   = 8
    pipeline_parallel = 4
    data_parallel     = 8
  }

  driver {
    version          = module.stack.driver_version
    kernel_module    = module.stack.kernel_module
    persistence_mode = true
    fabric_manager   = true # NVSwitch: no fabric manager, no NVLink
    peermem          = true # GPUDirect RDMA between GPUs and the ConnectX-7 NICs
  }

  cuda {
    version = module.stack.cuda_version
  }

  nccl {
    version = module.stack.nccl_version
  }

  dcgm {
    version = module.stack.dcgm_version
  }

  container {
    runtime                  = "docker"
    nvidia_container_toolkit = module.stack.container_toolkit_version
    default_runtime          = true
    default_shm_size         = "16GiB"
    ulimits = {
      memlock = "unlimited" # RDMA registers (pins) GPU and host buffers
      stack   = "64MiB"
    }
    images = [local.image]
  }

  shm {
    size = "50%"
  }

  # GPUs 0-3 hang off socket 0, GPUs 4-7 off socket 1 (see the hardware module).
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

  # Each GPU talks to the fabric through the HCA under its own PCIe switch.
  affinity {
    gpu_nic = {
      0 = "mlx5_0"
      1 = "mlx5_3"
      2 = "mlx5_4"
      3 = "mlx5_5"
      4 = "mlx5_6"
      5 = "mlx5_9"
      6 = "mlx5_10"
      7 = "mlx5_11"
    }
    nccl_env    = true
    nccl_ib_hca = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
    # NCCL bootstraps over IPoIB on the compute ports (ibp24s0 ... ibp220s0).
    nccl_socket_ifname = "ibp"
  }

  # Slurm places each task beside its GPU (srun --gpu-bind=closest): apply
  # writes gres.conf lines with each GPU's cores from the binds above.
  # slurm.conf's node line says Gres=gpu:h100_sxm5_80gb:8.
  slurm {
    gres = true
  }

  sysctl = {
    "vm.swappiness" = 1
  }
  kernel_args  = ["iommu=pt"]
  cpu_governor = "performance"

  verify {
    nvml {
      gpus              = 8
      ecc               = true
      min_pcie_gen      = 5
      min_pcie_width    = 16
      nvlink            = "all_active"
      max_temperature_c = 85
    }

    # Floor from Azure's health checks for 8x H100 (ND96isr H100 v5): all_reduce
    # at a single 16 GB message, 460 GB/s bus bandwidth (nccl-thresholds.tsv).
    nccl_test "allreduce" {
      command        = "all_reduce_perf -b 16G -e 16G -f 2 -g 8"
      min_busbw_gbps = var.allreduce_floor_gbps
      timeout        = "10m"
    }
  }

  rollout {
    batch        = var.rollout_batch
    max_failures = 1
    drain        = "slurm"
    reboot       = "allow"
  }
}

# Job scripts that set NCCL themselves should use the same HCAs the node pins.
output "nccl_ib_hca" {
  description = "NCCL_IB_HCA value matching the compute HCAs of every node."
  value       = join(",", module.hgx.nccl_ib_hca)
}
