node "a" {
  hosts = ["gpu1"]
  container {
    ulimits = { memlock = "lots" } # ERROR: Invalid ulimit
  }
}
