node "a" {
  hosts = ["gpu1"]
  driver {
    version        = "550.127.08"
    persistance_mode = true # ERROR: Unsupported argument
  }
}
