# A small spec with one finding of each severity, used by the golden tests
# of every output format.
module "hgx" { source = "gpuform/hgx-h100-8gpu" }

node "train" {
  hosts    = ["gpu001.example.com"]
  hardware = module.hgx.hardware

  driver {
    version          = "550.127.08"
    persistence_mode = false
  }
  container {
    nvidia_container_toolkit = "1.17.8"
    default_shm_size         = "256MiB"
    ulimits                  = { memlock = "unlimited", stack = "8MiB" }
  }
  numa {
    balancing = false
    bind {
      gpus = [0, 1, 2, 3]
      node = 1
    }
  }
}
