module "tray" { source = "gpuform/gb200-nvl72-tray" }

# Nineteen trays of 4 GPUs in one domain: 76 GPUs, more than a rack's 72.
node "racks" {
  hosts    = ["sim://gb200-nvl72-tray/t[01-19]"]
  hardware = module.tray.hardware
  driver {
    version       = "580.159.03"
    kernel_module = "open"
    imex          = true
  }
  nvlink_domain "rack1" {}
}
