node "a" {
  hosts = ["gpu01", "gpu02", "gpu03", "gpu04"]
  verify {
    nccl_test "fleet" {
      command = "mpirun -np 16 -H gpu01,gpu01,gpu01,gpu01,gpu01,gpu01,gpu01,gpu01,gpu02,gpu02,gpu02,gpu02,gpu02,gpu02,gpu02,gpu02 all_reduce_perf -b 8 -e 8G -g 1" # ERROR: Multi-node nccl_test names its own hosts
    }
    nccl_test "slurm" {
      command    = "srun -N 2 --nodelist=gpu03,gpu04 all_reduce_perf -g 1" # ERROR: Multi-node nccl_test names its own hosts
      multi_node = true
    }
    nccl_test "hostfile" {
      command = "mpirun --hostfile /etc/gpuform/hosts -np 32 all_reduce_perf -g 1" # ERROR: Multi-node nccl_test names its own hosts
    }
    # A per-host test may run a launcher as written (lint warns when it
    # names other hosts); one that names no hosts runs on the group's.
    nccl_test "local" {
      command    = "mpirun -np 8 -H localhost all_reduce_perf -g 1"
      multi_node = false
    }
    nccl_test "group" {
      command = "mpirun -np 32 all_reduce_perf -g 1"
    }
  }
}
