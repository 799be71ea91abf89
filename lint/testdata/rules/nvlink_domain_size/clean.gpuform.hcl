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

# Two more racks whose domains plan reads from the trays' NVLink fabric
# (cluster UUID and clique id): the block is not one domain, so 36 trays
# in it are not too many.
node "fabric-racks" {
  hosts    = ["sim://gb200-nvl72-tray/r3-t[01-18]", "sim://gb200-nvl72-tray/r4-t[01-18]"]
  hardware = module.tray.hardware
  driver {
    version       = "580.159.03"
    kernel_module = "open"
  }
  nvlink_domain "fabric" { from = "fabric" }
}
