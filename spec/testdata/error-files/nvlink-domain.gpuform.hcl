node "rack1" {
  hosts = ["tray01", "tray02", "tray03"]
  nvlink_domain "rack1" {
    hosts = ["tray01", "tray02", "tray4"] # ERROR: Host not in the node
  }
  nvlink_domain "rack1b" {
    hosts = ["tray02"] # ERROR: Host in two NVLink domains
  }
  rollout {
    unit = "nvlink_domain" # ERROR: Hosts outside every NVLink domain
  }
}
