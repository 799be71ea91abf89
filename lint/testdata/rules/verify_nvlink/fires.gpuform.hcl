# Fixture for lint rule verify_nvlink (fires case): an L40S has no NVLink, so
# "all_active" fails every healthy node.
module "l40s" { source = "gpuform/l40s-8gpu-pcie" }

# The built-in L40S profile: its interconnect is PCIe.
node "infer" {
  hosts    = ["l40s001.example.com"]
  hardware = module.l40s.hardware
  verify {
    nvml {
      nvlink = "all_active"
    }
  }
}

# A hand-written L40S block that claims an NVLink bridge: the model has no
# NVLink (the knowledge base's row rests on reseller copies of the datasheet,
# so a warning).
node "bare" {
  hosts = ["l40s009.example.com"]
  hardware = {
    name         = "L40S server"
    gpu_model    = "L40S"
    gpu_count    = 4
    interconnect = "nvlink_bridge"
  }
  verify {
    nvml {
      nvlink = "all_active"
    }
  }
}
