node "a" {
  hosts = ["gpu1"]
  sysctl = {
    "vm.swappiness" = 1
    "vm;reboot"     = 1 # ERROR: Invalid sysctl
  }
}
