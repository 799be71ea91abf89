node "a" {
  hosts = ["gpu[1-4]"]
}

node "b" {
  hosts = [
    "gpu9",
    "gpu3", # ERROR: Host gpu3 is in node "a" and node "b"
    "gpu[1-2]", # ERROR: Hosts gpu1, gpu2 are in node "a" and node "b"
  ]
}
