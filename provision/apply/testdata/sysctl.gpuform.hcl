variable "hosts" {
  type = list(string)
}

node "fleet" {
  hosts  = var.hosts
  sysctl = { "vm.swappiness" = "1" }
  rollout {
    batch        = 4
    max_failures = 1
  }
}
