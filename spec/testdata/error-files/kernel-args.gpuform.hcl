locals {
  # 1,200 bytes: with the argument below, past the 1024-byte limit.
  long = join("", [for i in range(120) : "abcdefghij"])
}

node "a" {
  hosts = ["gpu1"]
  kernel_args = [
    "iommu=pt",
    "--", # ERROR: Invalid kernel argument
    "init=/bin/sh",
  ]
}

node "b" {
  hosts = ["gpu2"]
  kernel_args = [
    "iommu=pt",
    "x=${local.long}", # ERROR: Kernel arguments too long
  ]
}
