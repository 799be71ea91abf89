module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

node "train" {
  hosts    = ["gpu01", "gpu02", "gpu03", "gpu04"]
  hardware = module.hgx.hardware
  verify {
    # A site script that starts its own job: verify cannot give it the
    # group's hosts, so it judges each host on the run's rank lines.
    nccl_test "fleet" {
      command    = "/opt/site/run-allreduce.sh all_reduce_perf -b 8 -e 8G -g 1"
      multi_node = true
      network    = "ib_ndr"
    }
  }
}
