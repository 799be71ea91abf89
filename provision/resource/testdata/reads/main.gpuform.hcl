# TestDeclaredReads plans this spec against every simulated profile beside
# the examples, for the resource types and settings they leave out: an
# Apptainer node, GPU NIC IRQ affinity, and gres.conf in Slurm's older
# configuration directory with pyxis.

module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

node "apptainer" {
  hosts    = ["sim://x"]
  hardware = module.hgx.hardware

  container {
    runtime           = "apptainer"
    apptainer_version = "1.4.5"
  }
  affinity {
    nic_irq_affinity = true
  }
}

node "slurm-llnl" {
  hosts    = ["sim://y"]
  hardware = module.hgx.hardware

  container {
    runtime        = "enroot"
    enroot_version = "4.1.2"
    pyxis_version  = "0.24.0"
  }
  slurm {
    gres     = true
    conf_dir = "/etc/slurm-llnl"
  }
}

# A GB200 NVL72 rack's trays with IMEX: the package, the domain's peers in
# nodes_config.cfg and the channel device (planned where /proc/devices
# has the channel major, as on the gb200-nvl72-tray profile).
node "nvl72" {
  hosts = ["sim://gb200-nvl72-tray", "sim://gb200-nvl72-tray/t02"]
  driver {
    version       = "580.159.03"
    kernel_module = "open"
    imex          = true
  }
  nvlink_domain "rack1" {}
}
