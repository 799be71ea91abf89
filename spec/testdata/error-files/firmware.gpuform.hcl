node "rack1" {
  hosts = ["tray01"]
  firmware {
    gpu_vbios = "97.00.0B" # ERROR: Invalid VBIOS version
  }
}
