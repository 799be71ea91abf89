inventory "train" {
  hosts = [
    "gpu[1-4]",
    "gpu3", # ERROR: Duplicate host
  ]
}
