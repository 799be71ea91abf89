# sim://dgx-a100 has none of bench's tools installed.
node "a100" {
  hosts = ["sim://dgx-a100"]

  bench {
    storage "dataset" {
      path          = "/var/tmp"
      min_read_gbps = 2
    }
  }
}
