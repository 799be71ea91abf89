node "a" {
  hosts = ["gpu[1-4]"]
}

node "b" {
  hosts = [
    "gpu9",
    "gpu3", # ERROR: Host gpu3 is in node "a" and node "b"
  ]
}
