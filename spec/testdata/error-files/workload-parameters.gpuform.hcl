node "a" {
  hosts = ["gpu1"]
  workload "llama" {
    parameters = "70 billion" # ERROR: Invalid value for "parameters"
  }
}
