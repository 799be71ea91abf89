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
