# Fixture for lint rule verify_nvlink (clean case): "none" on the L40S, and
# "all_active" on an NVSwitch board.
module "l40s" { source = "gpuform/l40s-8gpu-pcie" }
module "hgx" { source = "gpuform/hgx-h100-8gpu" }

node "infer" {
  hosts    = ["l40s001.example.com"]
  hardware = module.l40s.hardware
  verify {
    nvml {
      nvlink = "none"
    }
  }
}

node "train" {
  hosts    = ["gpu001.example.com"]
  hardware = module.hgx.hardware
  verify {
    nvml {
      nvlink = "all_active"
    }
  }
}
