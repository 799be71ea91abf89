node "a" {
  hosts = ["gpu1"]
  driver {
    version       = "550.127.08"
    kernel_module = "opne" # ERROR: Invalid value for "kernel_module"
  }
}
