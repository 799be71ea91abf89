# A multi-node test asked for at -tier fleet on a machine verified with
# --local, where multi-node tests never run: the host is not run, and has
# not passed.
node "gpu" {
  hosts = ["sim://hgx-h100-converged"]
  verify {
    nccl_test "fleet" {
      command = "mpirun -np 16 -N 8 all_reduce_perf -b 8 -e 16G -f 2 -g 1"
      network = "ib_ndr"
    }
  }
}
