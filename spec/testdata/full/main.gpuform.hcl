gpuform { required_version = ">= 0.1" }

variable "driver" {
  type    = string
  default = "550.127.08"
}
locals { cuda = "12.4.1" }

inventory "train" {
  hosts  = ["gpu[001-032].dc1.example.com"]
  user   = "ops"
  jump   = "bastion.dc1.example.com"
  become = "sudo"
}

node "train" {
  hosts    = inventory.train
  hardware = {
    gpu_model = "H100-SXM5-80GB"
    gpu_count = 2
    interconnect = "nvswitch"
    numa_nodes = 2
    gpus = [{ index = 0, pci = "0000:18:00.0", numa = 0 }, { index = 1, pci = "0000:2a:00.0", numa = 1 }]
    nics = [{ name = "mlx5_0", numa = 0, rdma = true }]
  }

  driver {
    version = var.driver
    kernel_module = "open"
    persistence_mode = true
    fabric_manager = true
    peermem = true
  }
  cuda { version = local.cuda }
  nccl { version = "2.21.5" }
  container {
    runtime = "docker"
    nvidia_container_toolkit = "1.16.2"
    default_shm_size = "16GiB"
    ulimits = { memlock = "unlimited", stack = "64MiB" }
    images = ["nvcr.io/nvidia/pytorch:24.05-py3"]
  }
  shm { size = "50%" }
  numa {
    balancing = false
    dynamic "bind" {
      for_each = { 0 = [0], 1 = [1] }
      content {
        gpus = bind.value
        node = tonumber(bind.key)
      }
    }
  }
  affinity {
    gpu_nic = { 0 = "mlx5_0", 1 = "mlx5_1" }
    nccl_env = true
  }
  sysctl      = { "vm.swappiness" = 1 }
  kernel_args = ["iommu=pt"]
  verify {
    nvml {
      gpus = 8
      ecc = true
      min_pcie_gen = 5
      nvlink = "all_active"
    }
    nccl_test "allreduce" {
      command = "all_reduce_perf -b 8 -e 8G -f 2 -g 8"
      min_busbw_gbps = 350
    }
  }
  rollout {
    batch = 4
    max_failures = 1
    drain = "slurm"
  }
}

node "extras" {
  hosts           = ["gpu[1-2].lab", inventory.extras]
  tensor_parallel = 8
  cpu_governor    = "performance"
  dcgm { version = "3.3.9" }
  hugepages {
    size  = "2MiB"
    count = 1024
  }
  affinity {
    nccl_ib_hca        = ["mlx5_0", "mlx5_1:1"]
    nccl_socket_ifname = "^docker,lo"
  }
  container {
    runtime         = "containerd"
    default_runtime = true
    ulimits         = { nofile = "1048576", nproc = "unlimited" }
  }
  verify {
    nvml {
      min_pcie_width    = 16
      max_temperature_c = 85
    }
    nccl_test "ag" {
      command = "all_gather_perf -b 8 -e 1G -g 8"
      timeout = "10m"
    }
  }
  rollout { reboot = "allow" }
}

output "hosts" {
  value       = inventory.train.hosts
  description = "every training host"
}

lint {
  rule "shm_size_floor" {
    enabled = false
  }
  rule "driver_branch_eol" {
    severity = "warning"
  }
}

# A host follows one node block, so the extras take a second inventory.
inventory "extras" {
  hosts = ["x[001-032].dc1.example.com"]
  user  = "ops"
}
