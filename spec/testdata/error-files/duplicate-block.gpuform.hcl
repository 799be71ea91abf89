node "a" {
  hosts = ["gpu1"]
  cuda { version = "12.4.1" }
  cuda { version = "12.6.2" } # ERROR: Duplicate cuda block
}
