# Find the bad node (docs/guide/bad-node.md): eight simulated HGX H100
# nodes in one group, gpu04 on sim://hgx-h100-slownic (one of its eight
# compute NICs up at 200 Gb/s; every single-node check passes). The
# group's 8-node all_reduce is below its floor, and pairwise isolation
# names gpu04.

module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

# gpuform-ignore: numa_balancing -- an isolation example: it only verifies, the host setup is the quickstart's subject
node "train" {
  hosts = [
    "sim://hgx-h100-converged/gpu01",
    "sim://hgx-h100-converged/gpu02",
    "sim://hgx-h100-converged/gpu03",
    "sim://hgx-h100-slownic/gpu04",
    "sim://hgx-h100-converged/gpu05",
    "sim://hgx-h100-converged/gpu06",
    "sim://hgx-h100-converged/gpu07",
    "sim://hgx-h100-converged/gpu08",
  ]
  hardware = module.hgx.hardware

  verify {
    optional  = ["dcgm"]     # the simulated nodes have no DCGM
    isolation = "on_failure" # the default: pairs only after a failed group run
    nccl_test "fleet64" {
      command        = "mpirun -np 64 all_reduce_perf -b 8M -e 8G -f 2 -g 1"
      min_busbw_gbps = 120
    }
  }
}
