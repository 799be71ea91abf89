# A simulated node whose bench workload is not the simulated one: the
# checkpoint drill would run it on this machine, and refuses without
# -allow-local.

node "train" {
  hosts = ["sim://hgx-h100-converged"]

  bench {
    command    = "torchrun --nproc_per_node={gpus} train.py"
    throughput = "samples/s: ([0-9.]+)"
    checkpoint {
      resume_command = "torchrun --nproc_per_node={gpus} train.py --resume"
      resumed        = "resumed from step ([0-9]+)"
    }
  }
}
