node "a" {
  hosts = ["gpu1"]
}

node "a" { # ERROR: Duplicate node "a"
  hosts = ["gpu2"]
}
