variable "nccl" {
  default = 2.20
}

node "a" {
  hosts = ["gpu1"]
  driver {
    version = 550 # ERROR: Version must be a string
  }
  cuda {
    version = 12.10 # ERROR: Version must be a string
  }
  nccl {
    version = var.nccl # ERROR: Version must be a string
  }
  dcgm {
    version = "3.3.9"
  }
  container {
    runtime                  = "docker"
    nvidia_container_toolkit = 1.17 # ERROR: Version must be a string
    enroot_version           = 4.1 # ERROR: Version must be a string
  }
}
