node "a" {
  hosts = ["gpu1"]
  shm {
    size = "16 gigs" # ERROR: Invalid size
  }
}
