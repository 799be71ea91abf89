variable "gpus" {
  type = number
}

module "rack" {
  source = "./rack"
  gpus   = var.gpus
}

module "h100" {
  source = "gpuform/hgx-h100-8gpu"
}

node "n" {
  hosts    = module.rack.hosts
  hardware = module.h100.hardware
  verify {
    nvml { gpus = module.rack.gpus }
  }
}
