# An L40S PCIe node on Rocky Linux 9 (sim://l40s-rocky9): dnf installs and
# versionlock, no fabric manager (PCIe GPUs have no NVSwitch). Versions are
# the built-in CUDA 12.8 stack that the simulated repository carries.
node "inference" {
  hosts = ["sim://l40s-rocky9"]
  driver {
    version          = "580.95.05"
    kernel_module    = "open"
    persistence_mode = true
  }
  cuda { version = "12.8.1" }
  nccl { version = "2.25.1" }
  container {
    runtime                  = "docker"
    nvidia_container_toolkit = "1.17.8"
    default_runtime          = true
    default_shm_size         = "8GiB"
  }
  sysctl = { "vm.swappiness" = "1" }
}
