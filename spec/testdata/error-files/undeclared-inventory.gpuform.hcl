node "a" {
  hosts = inventory.trian # ERROR: Reference to undeclared inventory
}
inventory "train" {
  hosts = ["gpu1"]
}
