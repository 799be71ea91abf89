module "tray" { source = "gpuform/gb200-nvl72-tray" }

# Two racks of 18 trays, one domain each.
node "racks" {
  hosts    = ["sim://gb200-nvl72-tray/r1-t[01-18]", "sim://gb200-nvl72-tray/r2-t[01-18]"]
  hardware = module.tray.hardware
  driver {
    version       = "580.159.03"
    kernel_module = "open"
    imex          = true
  }
  nvlink_domain "rack1" {
    hosts = ["sim://gb200-nvl72-tray/r1-t[01-18]"]
  }
  nvlink_domain "rack2" {
    hosts = ["sim://gb200-nvl72-tray/r2-t[01-18]"]
  }
}
