# Slurm nodes that run every job in a container through enroot and pyxis
# (srun --container-image), with the job's image pinned by digest and
# pre-pulled onto local disk before the job starts.

gpuform {
  required_version = ">= 0.1"
}

module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

module "stack" {
  source = "gpuform/stack-cuda12-8"
}

inventory "slurm" {
  hosts  = ["gpu[001-016].dc1.example.com"]
  user   = "ops"
  become = "sudo"
}

node "slurm" {
  hosts    = inventory.slurm
  hardware = module.hgx.hardware

  driver {
    version          = module.stack.driver_version
    kernel_module    = module.stack.kernel_module
    persistence_mode = true
    fabric_manager   = true
    peermem          = true
  }

  container {
    runtime = "enroot"
    # enroot's 98-nvidia.sh hook gives containers their GPUs through the
    # toolkit's nvidia-container-cli.
    nvidia_container_toolkit = module.stack.container_toolkit_version

    # Packages from the site mirror, installed and held; gpuform lock
    # records them next to the driver.
    enroot_version = "4.1.2"
    enroot_caps    = true # users import images without root
    pyxis_version  = "0.24.0"

    # Image layers and unpacked containers on the local NVMe RAID, not
    # in the shared home directories.
    enroot_cache_path   = "/raid/enroot/cache/group-$(id -g)"
    enroot_data_path    = "/raid/enroot/data/user-$(id -u)"
    enroot_restrict_dev = true

    # Written to the host's limits file, which enroot's containers inherit:
    # RDMA registers (pins) GPU and host buffers.
    ulimits = {
      memlock = "unlimited"
    }

    # gpuform lock resolves the tag to its digest; apply imports it into
    # image_dir as a squashfs file named by that digest, with a tag link
    # jobs name: srun --container-image=/raid/containers/nvcr.io+nvidia+pytorch+25.03-py3.sqsh
    images    = [module.stack.pytorch_image]
    image_dir = "/raid/containers"
  }

  # enroot containers share the host's /dev/shm: size it here.
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

  slurm {
    gres = true
  }

  verify {
    nvml {
      gpus   = 8
      ecc    = true
      nvlink = "all_active"
    }
  }

  kernel_args = ["iommu=pt"]

  rollout {
    batch = 2
    drain = "slurm"
  }
}
