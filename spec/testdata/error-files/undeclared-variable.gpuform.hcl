node "a" {
  hosts = ["gpu1"]
  driver {
    version = var.drvier # ERROR: Reference to undeclared input variable
  }
}
