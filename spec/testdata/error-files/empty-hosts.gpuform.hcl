node "a" {
  hosts = [] # ERROR: No hosts
}
