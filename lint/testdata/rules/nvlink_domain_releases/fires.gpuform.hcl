module "tray" { source = "gpuform/gb200-nvl72-tray" }

# Seventeen trays of rack1 on one release, and one tray (a canary) of the
# same rack on another, with IMEX off.
node "rack1" {
  hosts    = ["sim://gb200-nvl72-tray/r1-t[01-17]"]
  hardware = module.tray.hardware
  driver {
    version       = "580.159.03"
    kernel_module = "open"
    imex          = true
  }
  nvlink_domain "rack1" {}
}

node "rack1-canary" {
  hosts    = ["sim://gb200-nvl72-tray/r1-t18"]
  hardware = module.tray.hardware
  driver {
    version       = "580.95.05"
    kernel_module = "open"
    imex          = false
  }
  nvlink_domain "rack1" {}
}

# rack2's driver is a branch: each tray resolves it when installed.
node "rack2" {
  hosts    = ["sim://gb200-nvl72-tray/r2-t[01-18]"]
  hardware = module.tray.hardware
  driver {
    version       = "580"
    kernel_module = "open"
    imex          = true
  }
  nvlink_domain "rack2" {}
}
