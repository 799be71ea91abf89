node "rack1" {
  hosts = ["tray01"]
  firmware {
    gpu_vbios    = "97.00.0B"     # ERROR: Invalid VBIOS version
    nic_firmware = "28.43"        # ERROR: Invalid NIC firmware version
    bios         = " 1.3.5"       # ERROR: Invalid BIOS version
    bmc          = "3.10.17"      # ERROR: Invalid BMC firmware revision
  }
}
