node "a" {
  hosts = ["gpu1"]
  bench {
    command    = "torchrun --nproc_per_node={gpus} train.py; rm -rf /" # ERROR: Invalid bench command
    throughput = "samples/s: [0-9.]+" # ERROR: Invalid throughput pattern
    gpus       = [1, 2, 2] # ERROR: Duplicate value in "gpus"
    timeout    = "soon" # ERROR: Invalid timeout
    warmup     = 3 # ERROR: Unsupported argument
    tools = [
      "perftest",
      "perftest", # ERROR: Duplicate value in "tools"
      "nccl-tests", # ERROR: Bench tool without a package
      "iperf3", # ERROR: Unknown bench tool
    ]
    storage "dataset" {
      path = "/data/../etc" # ERROR: Invalid storage path
    }
  }
}
