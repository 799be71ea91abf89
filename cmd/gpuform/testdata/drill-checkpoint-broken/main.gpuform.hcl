# Two workloads on simulated nodes for the checkpoint-restore drill: one
# resumes from its checkpoint; the other's resume command forgot
# --resume, so it starts over and never says it resumed.

module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

node "resumes" {
  hosts    = ["sim://hgx-h100-converged/a"]
  hardware = module.hgx.hardware

  bench {
    command    = "gpuform-sim-train --gpus={gpus} --ckpt-dir=/scratch/ckpt --steps=20 --save-every=3 --step-time=0.1"
    throughput = "samples/s: ([0-9.]+)"
    gpus       = [1, 2, 4]
    checkpoint {
      resume_command = "gpuform-sim-train --gpus={gpus} --ckpt-dir=/scratch/ckpt --steps=20 --save-every=3 --step-time=0.1 --resume"
      resumed        = "resumed from step ([0-9]+)"
      kill_after     = "1s"
    }
  }
}

node "starts-over" {
  hosts    = ["sim://hgx-h100-converged/b"]
  hardware = module.hgx.hardware

  bench {
    command    = "gpuform-sim-train --gpus={gpus} --ckpt-dir=/scratch/ckpt --steps=20 --save-every=3 --step-time=0.1"
    throughput = "samples/s: ([0-9.]+)"
    checkpoint {
      resume_command = "gpuform-sim-train --gpus={gpus} --ckpt-dir=/scratch/ckpt --steps=20 --save-every=3 --step-time=0.1"
      resumed        = "resumed from step ([0-9]+)"
      kill_after     = "1s"
    }
  }
}
