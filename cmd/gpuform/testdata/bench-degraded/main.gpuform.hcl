# sim://hgx-h100-degraded: GPU 5 trained at PCIe x8, mlx5_3 up at 200 Gb/s.
node "degraded" {
  hosts = ["sim://hgx-h100-degraded"]

  bench {
    storage "checkpoint" {
      path = "/var/tmp"
    }
  }
}
