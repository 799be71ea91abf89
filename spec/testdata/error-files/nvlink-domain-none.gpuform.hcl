node "rack1" {
  hosts = ["tray01", "tray02"]
  rollout {
    unit = "nvlink_domain" # ERROR: Hosts outside every NVLink domain
  }
}
