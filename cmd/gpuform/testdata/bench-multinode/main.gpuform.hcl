# Two simulated HGX H100 nodes in one group whose multi-node all_reduce
# (a real capture, see SOURCE.md) crosses a slow network.
node "group" {
  hosts = ["sim://hgx-h100-stale/a", "sim://hgx-h100-stale/b"]

  verify {
    nccl_test "all_reduce_2node" {
      command    = "cat testdata/bench-multinode/all_reduce_perf-16xH200-2node-single-shared-nic-socket.txt"
      multi_node = true
    }
  }
}
