node "a" {
  hosts = ["gpu1"]
  verify {
    optional = [
      "dcgm",
      "nccl-tests", # ERROR: Invalid value in "optional"
      "dcgm",       # ERROR: Duplicate value in "optional"
    ]
  }
}
