# The node slurm block: gres.conf lines need the hardware description, and
# its other settings shape what gres = true writes.
node "nohw" {
  hosts = ["gpu001"]
  slurm {
    gres = true # ERROR: gres needs the node's hardware
  }
}

node "off" {
  hosts = ["gpu002"]
  slurm {
    gres_autodetect = "nvml" # ERROR: gres_autodetect needs gres = true
  }
}

node "both" {
  hosts = ["gpu003"]
  slurm {
    gres            = true
    gres_autodetect = "nvml"
    gres_type       = "h100" # ERROR: gres_type with gres_autodetect
  }
}

node "bad" {
  hosts    = ["gpu004"]
  hardware = { gpu_model = "H100 SXM5 80GB", gpu_count = 8, interconnect = "nvswitch" }
  slurm {
    gres      = true
    gres_type = "h100:8"          # ERROR: Invalid gres_type
    conf_dir  = "/usr/local/etc"  # ERROR: Invalid value for "conf_dir"
  }
}
