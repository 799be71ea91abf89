node "a" {
  hosts = ["gpu1"]
  hardware = {
    gpu_model    = "H100-SXM5-80GB"
    gpu_count    = 1
    interconnect = "pcie"
    gpu          = [{ index = 0 }] # ERROR: Invalid hardware description
  }
}
