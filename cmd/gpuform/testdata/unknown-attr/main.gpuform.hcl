node "a" {
  hosts = ["gpu1"]
  driver {
    version       = "580.95.05"
    kernel_modul  = "open"
  }
}
