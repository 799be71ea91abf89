node "a" {
  hosts = ["gpu1"]
  driver {
    version          = "550.127.08"
    persistence_mode = "sometimes" # ERROR: Incorrect attribute value type
  }
}
