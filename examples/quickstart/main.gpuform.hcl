# Quickstart: one simulated HGX H100 node, built into the gpuform binary, so
# plan, apply and verify run on a laptop with no GPU server and no SSH.
#
# sim://hgx-h100-stale starts out the way many fleets look: an old driver and
# Docker's 64 MB default /dev/shm. The plan shows what gpuform would change;
# apply converges it; verify proves the result.

gpuform {
  required_version = ">= 0.1"
}

# Topology of the node: GPUs, NUMA nodes, PCIe switches, NICs (see modules/README.md).
module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

# A driver / CUDA / NCCL / toolkit set that works together.
module "stack" {
  source = "gpuform/stack-cuda12-8"
}

node "quickstart" {
  hosts    = ["sim://hgx-h100-stale"]
  hardware = module.hgx.hardware

  driver {
    version          = module.stack.driver_version
    kernel_module    = module.stack.kernel_module
    persistence_mode = true
    fabric_manager   = true # NVSwitch systems need nvidia-fabricmanager, same version as the driver
    peermem          = true # GPUDirect RDMA over the ConnectX-7 NICs
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
    default_shm_size         = "16GiB" # Docker's 64 MB default breaks NCCL and DataLoader workers
    ulimits = {
      memlock = "unlimited" # RDMA pins memory
      stack   = "64MiB"
    }
    # No images: pinning one needs its registry's digest, and the
    # quickstart runs offline. examples/inference-pcie and
    # examples/training-cluster pin images (see docs/guide/containers.md,
    # "Pin your containers").
  }

  shm {
    size = "50%"
  }

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
    gpu_nic     = module.hgx.gpu_nic # each GPU with the NIC under its own PCIe switch
    nccl_env    = true
    nccl_ib_hca = module.hgx.nccl_ib_hca
  }

  kernel_args  = ["iommu=pt"] # GPUDirect RDMA wants the IOMMU in pass-through
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
  }

  # A new driver is live only after a reboot. The simulated node reboots in
  # an instant, so the quickstart allows it; on a real fleet, decide per node.
  rollout {
    reboot = "allow"
  }
}
