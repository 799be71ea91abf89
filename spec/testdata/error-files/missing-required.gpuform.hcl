node "a" {
  hosts = ["gpu1"]
  cuda { # ERROR: Missing required argument
  }
}
