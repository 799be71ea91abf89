# One GB200 NVL72 rack: 18 compute trays of 4 GPUs that share one NVLink
# domain. Every tray runs the same driver with IMEX at its release, IMEX
# knows every tray of the rack, and apply changes the rack as one unit:
# never some trays on one driver and the rest on another.
#
# The hosts default to 18 simulated trays built into gpuform
# (sim://gb200-nvl72-tray/<instance>); pass your trays with
# -var 'trays=["tray01.dc1.example.com", …]'.

gpuform {
  required_version = ">= 0.1"
}

variable "trays" {
  type        = list(string)
  description = "The rack's 18 compute trays, in slot order."
  default     = ["sim://gb200-nvl72-tray/rack1-t[01-18]"]
}

# A GB200 NVL72 compute tray: 4 GPUs on 2 Grace CPUs, NVLink domain 72.
module "tray" {
  source = "gpuform/gb200-nvl72-tray"
}

node "rack1" {
  hosts    = var.trays
  hardware = module.tray.hardware

  driver {
    version          = "580.159.03"
    kernel_module    = "open" # Blackwell needs the open kernel modules
    persistence_mode = true
    imex             = true # nvidia-imex at the driver's release, peers from the domain
  }

  # The rack is one NVLink domain: its trays' IMEX daemons list each other.
  nvlink_domain "rack1" {}

  # The firmware every tray must run (verify judges it; gpuform flashes
  # nothing): the simulated tray's modelled versions. verify's
  # firmware.domain_drift also names a tray that differs from its rack.
  firmware {
    gpu_vbios    = "97.00.0B.00.2F"
    nic_firmware = "28.43.2026"
    bios         = "1.3.5"
    bmc          = "25.06" # as ipmitool mc info prints it
  }

  numa {
    balancing = false # two Grace CPUs: bind, do not migrate
    dynamic "bind" {
      for_each = module.tray.numa_binds
      content {
        gpus = bind.value.gpus
        node = bind.value.node
      }
    }
  }

  # A driver change is the whole rack at once; stop at the first rack that fails.
  rollout {
    unit         = "nvlink_domain"
    batch        = 1
    max_failures = 0
  }
}
