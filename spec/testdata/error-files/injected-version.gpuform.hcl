node "a" {
  hosts = ["gpu1"]
  driver {
    version = "550.1; rm -rf /" # ERROR: Invalid version
  }
}
