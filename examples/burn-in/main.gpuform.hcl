# Burn-in before a node takes work (README, "Drills and burn-in"):
# verify -tier burnin runs the fleet tier's checks, then DCGM level 3/4,
# a sustained GEMM load with every GPU's temperature, clocks and throttle
# reasons sampled, and the AER counters before and after, and records the
# result on the node (/var/lib/gpuform/burnin.json). verify
# -require-burnin (in CI, or in the Slurm prolog) then refuses the node
# until it has a passed burn-in of its current GPUs and driver, no older
# than max_age.

module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

# gpuform-ignore: numa_balancing -- a verify example: the host setup is the quickstart's subject
node "burnin" {
  hosts    = ["sim://hgx-h100-converged"]
  hardware = module.hgx.hardware

  verify {
    burnin {
      duration = "4h"   # the sustained load
      max_age  = "720h" # a passed burn-in qualifies the node for 30 days
    }
  }
}
