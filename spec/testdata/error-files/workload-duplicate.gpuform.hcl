node "a" {
  hosts = ["gpu1"]
  workload "llama" {
    parameters = "70B"
  }
  workload "llama" { # ERROR: Duplicate workload "llama"
    parameters = "8B"
  }
}
