# The checkpoint-restore drill (docs/guide/drills.md#checkpoint-restore-drill):
# gpuform drill starts this node block's workload, kills it with SIGKILL
# after kill_after as a node loss would, runs resume_command, and passes
# when the resumed run says it resumed from a step above 0 and keeps its
# throughput within max_throughput_loss of before the kill.
#
# On a simulated node the workload is gpuform-sim-train, the simulated
# nodes' toy training job: a step every 0.1 s, 400 samples/s a GPU, a
# checkpoint every 5 steps. A real spec names its own job, as in
#   command        = "torchrun --nproc_per_node={gpus} train.py --ckpt-dir=/scratch/ckpt"
#   resume_command = "torchrun --nproc_per_node={gpus} train.py --ckpt-dir=/scratch/ckpt --resume"
# with kill_after long enough for the job to write a checkpoint.

module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

# gpuform-ignore: numa_balancing -- a drill example: the host setup is the quickstart's subject
node "train" {
  hosts    = ["sim://hgx-h100-converged"]
  hardware = module.hgx.hardware

  bench {
    command    = "gpuform-sim-train --gpus={gpus} --ckpt-dir=/scratch/ckpt --steps=30 --save-every=5 --step-time=0.1"
    throughput = "samples/s: ([0-9.]+)"

    checkpoint {
      resume_command      = "gpuform-sim-train --gpus={gpus} --ckpt-dir=/scratch/ckpt --steps=30 --save-every=5 --step-time=0.1 --resume"
      resumed             = "resumed from step ([0-9]+)" # the line the job prints on resume
      dir                 = "/scratch/ckpt"              # the killed run must have written a file here
      kill_after          = "2s"
      max_throughput_loss = 0.1 # the resumed run within 10 % of before
      timeout             = "1m"
    }
  }
}
