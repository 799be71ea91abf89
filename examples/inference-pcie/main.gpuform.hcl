# Inference nodes with 8 L40S PCIe cards each: no NVLink and no NVSwitch, so no
# fabric manager; models that span GPUs talk over PCIe within one socket.

gpuform {
  required_version = ">= 0.1"
}

variable "hosts" {
  type        = list(string)
  default     = ["infer[01-16].dc2.example.com"]
  description = "Inference nodes, Slurm-style ranges allowed."
}

variable "shm_per_gpu_gib" {
  type        = number
  default     = 2
  description = "Container /dev/shm per GPU, GiB; model servers pass tensors between worker processes through it."

  validation {
    condition     = var.shm_per_gpu_gib >= 1
    error_message = "Give each GPU at least 1 GiB of container /dev/shm."
  }
}

module "l40s" {
  source = "gpuform/l40s-8gpu-pcie"
}

module "stack" {
  source = "gpuform/stack-cuda12-8"
}

locals {
  gpus = module.l40s.hardware.gpu_count
}

inventory "infer" {
  hosts  = var.hosts
  user   = "deploy"
  become = "sudo"
}

node "infer" {
  hosts    = inventory.infer
  hardware = module.l40s.hardware

  driver {
    version          = module.stack.driver_version
    kernel_module    = module.stack.kernel_module
    persistence_mode = true  # keeps the driver loaded between requests: no cold-start latency
    fabric_manager   = false # PCIe-only: there is no NVSwitch to manage
    peermem          = false # no GPUDirect RDMA between nodes for serving
  }

  cuda {
    version = module.stack.cuda_version
  }

  nccl {
    version = module.stack.nccl_version
  }

  container {
    runtime                  = "docker"
    nvidia_container_toolkit = module.stack.container_toolkit_version
    default_runtime          = true
    default_shm_size         = "${local.gpus * var.shm_per_gpu_gib}GiB"
    ulimits = {
      memlock = "unlimited" # the ConnectX-7 ports are RDMA-capable
      stack   = "64MiB"
    }
    images = [module.stack.pytorch_image]
  }

  shm {
    size = "25%"
  }

  # One bind per socket, taken from the hardware profile.
  numa {
    balancing = false
    dynamic "bind" {
      for_each = module.l40s.numa_binds
      content {
        gpus = bind.value.gpus
        node = bind.value.node
      }
    }
  }

  cpu_governor = "performance"

  verify {
    nvml {
      gpus              = local.gpus
      ecc               = true
      min_pcie_gen      = 4 # L40S is a PCIe Gen4 x16 card
      min_pcie_width    = 16
      nvlink            = "none"
      max_temperature_c = 85
    }
  }

  # Nodes sit behind a load balancer, not Slurm: change two at a time, never
  # reboot on our own (apply reports "reboot pending" instead).
  rollout {
    batch        = 2
    max_failures = 0
    drain        = "none"
    reboot       = "never"
  }
}
