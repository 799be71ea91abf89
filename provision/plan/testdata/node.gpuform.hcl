# The stack here is pinned to package versions the simulated repository of
# sim://hgx-h100-stale carries (provision/sim/roots/hgx-h100-stale.txtar,
# var/lib/gpuform-sim/repo.txt), written with their package revisions so
# that apt gets exact versions.
module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

variable "hosts" {
  type    = list(string)
  default = ["sim://hgx-h100-stale/1"]
}

variable "batch" {
  type    = number
  default = 4
}

node "train" {
  hosts    = var.hosts
  hardware = module.hgx.hardware

  driver {
    version          = "550.127.08-0ubuntu1"
    kernel_module    = "proprietary"
    persistence_mode = true
    fabric_manager   = true
    peermem          = true
  }
  cuda { version = "12.4.1-1" }
  nccl { version = "2.21.5" }
  dcgm { version = "4.6.0" }

  container {
    runtime                  = "docker"
    nvidia_container_toolkit = "1.17.8"
    default_runtime          = true
    default_shm_size         = "16GiB"
    ulimits = {
      memlock = "unlimited"
      stack   = "64MiB"
    }
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
    gpu_nic  = module.hgx.gpu_nic
    nccl_env = true
  }
  sysctl       = { "vm.swappiness" = "1" }
  kernel_args  = ["iommu=pt"]
  cpu_governor = "performance"

  rollout {
    batch        = var.batch
    max_failures = 1
  }
}
