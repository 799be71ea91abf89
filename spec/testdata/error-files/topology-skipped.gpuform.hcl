# No ERROR marker: a node without hardware is valid, and the warning in the
# golden file says which of its blocks lint could not check.
node "a" {
  hosts = ["gpu1"]
  numa {
    bind {
      gpus = [0, 1]
      node = 0
    }
  }
  affinity {
    gpu_nic = { "0" = "mlx5_0" }
  }
}
