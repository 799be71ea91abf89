# Fault drills (docs/guide/drills.md): gpuform drill injects each fault of
# its catalogue into a fresh simulated HGX H100 node and shows which verify
# check of this node block catches it, what health mode would do and how
# long it took. The node block pins what sim://hgx-h100-converged runs, so
# the healthy node passes and every failure the drill counts is the fault's.

module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

# gpuform-ignore: numa_balancing -- a drill example: the host setup is the quickstart's subject
node "gpu" {
  hosts    = ["sim://hgx-h100-converged"]
  hardware = module.hgx.hardware

  driver {
    # gpuform-ignore: driver_branch_eol, driver_security_advisory -- the simulated converged node's 550 driver; a fleet pins a supported branch
    version          = "550.127.08"
    persistence_mode = true
    fabric_manager   = true # NVSwitch systems need nvidia-fabricmanager
  }

  shm {
    size = "50%"
  }

  affinity {
    nccl_ib_hca = module.hgx.nccl_ib_hca # the compute rails nic.link judges
  }

  verify {
    optional = ["dcgm"] # the simulated nodes have no DCGM
    nvml {
      gpus              = 8
      ecc               = true
      min_pcie_gen      = 5
      min_pcie_width    = 16
      nvlink            = "all_active"
      max_temperature_c = 85
    }
  }
}

# The slow-node drill's group: two healthy nodes and the slow one, verified
# together at -tier fleet with this block's settings. Its rails are not
# named to verify (no affinity), as in examples/fleet-isolation: every
# single-node check passes the slow node, and only the group's run and
# pairwise isolation tell it. The hosts here are for verify; the drill
# makes its own.
# gpuform-ignore: numa_balancing -- a drill example: the host setup is the quickstart's subject
node "train" {
  hosts = [
    "sim://hgx-h100-converged/n1",
    "sim://hgx-h100-converged/n2",
    "sim://hgx-h100-converged/n3",
  ]
  hardware = module.hgx.hardware

  verify {
    optional  = ["dcgm"]     # the simulated nodes have no DCGM
    isolation = "on_failure" # pairs only after a failed group run
    nccl_test "group" {
      command        = "mpirun -np 24 all_reduce_perf -b 8M -e 8G -f 2 -g 1"
      min_busbw_gbps = 120
    }
  }
}
