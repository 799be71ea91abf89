module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

node "train" {
  hosts    = ["gpu01", "gpu02", "gpu03", "gpu04"]
  hardware = module.hgx.hardware
  verify {
    # No host list: verify runs it on the node block's four hosts.
    nccl_test "fleet" {
      command = "mpirun -np 32 all_reduce_perf -b 8 -e 8G -g 1"
      network = "ib_ndr"
    }
    # A per-host test that happens to run under a launcher.
    nccl_test "local" {
      command    = "mpirun -np 8 all_reduce_perf -b 8 -e 8G -g 1"
      multi_node = false
    }
    # A site script run per host is not a multi-node test.
    nccl_test "script" {
      command = "/opt/site/run-allreduce.sh all_reduce_perf -g 8"
    }
  }
}
