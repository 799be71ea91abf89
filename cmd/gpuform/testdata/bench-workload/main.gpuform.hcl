# A workload whose throughput is echoed, 100 samples/s per GPU. The node is
# simulated, so the command runs on the machine gpuform runs on and bench
# needs -allow-local.
node "train" {
  hosts = ["sim://hgx-h100-stale"]

  bench {
    command    = "echo samples/s: {gpus}00"
    throughput = "samples/s: ([0-9.]+)"
    gpus       = [1, 2, 4]
  }
}
