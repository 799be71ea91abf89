# Every resource type gpuform manages, on simulated HGX H100 hosts
# (sim://hgx-h100-stale/NAME, one state per name), pinned to package
# versions the simulated repository carries (provision/sim/roots/
# hgx-h100-stale.txtar, var/lib/gpuform-sim/repo.txt). drift_test.go
# converges one host, copies it, changes one setting on each copy and
# requires verify and plan to name exactly that resource.
module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

variable "hosts" {
  type    = list(string)
  default = ["sim://hgx-h100-stale/converged"]
}

node "drift" {
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
    gpu_nic     = module.hgx.gpu_nic
    nccl_env    = true
    nccl_ib_hca = module.hgx.nccl_ib_hca
  }
  hugepages {
    size  = "2MiB"
    count = 1024
  }
  sysctl       = { "vm.swappiness" = "1" }
  kernel_args  = ["iommu=pt"]
  cpu_governor = "performance"
  slurm {
    gres = true
  }

  rollout {
    reboot = "allow"
  }
}
