node "a" {
  hosts = ["gpu1", "gpu2"]
  verify {
    nccl_test "fleet" {
      command    = "mpirun -np 16 all_reduce_perf -g 1"
      multi_node = "yes" # ERROR: Incorrect attribute value type
      network    = "infiniband" # ERROR: Invalid value for "network"
    }
  }
}
