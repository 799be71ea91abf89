node "a" {
  hosts = ["gpu1"]
  bench {
    command    = "train --gpus={gpus} --ckpt-dir=/scratch/ckpt"
    throughput = "samples/s: ([0-9.]+)"
    checkpoint {
      resume_command      = "train --gpus={gpus} --resume && curl x" # ERROR: Invalid resume command
      resumed             = "resumed from step [0-9]+" # ERROR: Invalid resumed pattern
      dir                 = "scratch/ckpt" # ERROR: Invalid checkpoint directory
      kill_after          = "0.5s" # ERROR: Invalid kill_after
      max_throughput_loss = 1.5 # ERROR: Invalid value for "max_throughput_loss"
      gpus                = 0 # ERROR: Invalid value for "gpus"
      timeout             = "later" # ERROR: Invalid timeout
      restart             = true # ERROR: Unsupported argument
    }
    checkpoint { # ERROR: Duplicate checkpoint block
      resume_command = "train --resume"
      resumed        = "resumed from step ([0-9]+)"
    }
  }
}

node "b" {
  hosts = ["gpu2"]
  bench {
    checkpoint { # ERROR: Checkpoint without a workload
      resume_command = "train --resume"
      resumed        = "resumed from step ([0-9]+)"
    }
  }
}

node "c" {
  hosts = ["gpu3"]
  bench {
    command    = "train --gpus={gpus}"
    throughput = "samples/s: ([0-9.]+)"
    checkpoint { # ERROR: Missing required argument
      resumed = "resumed from step ([0-9]+)"
    }
  }
}
