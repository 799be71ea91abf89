inventory "train" {
  hosts = ["gpu[010-001].dc1"] # ERROR: Invalid host pattern
}
