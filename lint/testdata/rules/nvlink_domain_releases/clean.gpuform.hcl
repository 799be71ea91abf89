module "tray" { source = "gpuform/gb200-nvl72-tray" }

# Two node blocks of one rack agree on every release.
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

node "rack1-login" {
  hosts    = ["sim://gb200-nvl72-tray/r1-t18"]
  hardware = module.tray.hardware
  driver {
    version       = "580.159.03"
    kernel_module = "open"
    imex          = true
  }
  nvlink_domain "rack1" {}
}
