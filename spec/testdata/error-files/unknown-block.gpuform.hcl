node "a" {
  hosts = ["gpu1"]
  drivers { # ERROR: Unsupported block type
    version = "550.127.08"
  }
}
