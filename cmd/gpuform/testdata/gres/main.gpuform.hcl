# A simulated HGX H100 host whose GPUs are bound to their NUMA nodes and
# described to Slurm: gres_test.go plans and applies gres.conf on it.
module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

node "gres" {
  hosts    = ["sim://hgx-h100-stale/gres"]
  hardware = module.hgx.hardware

  numa {
    dynamic "bind" {
      for_each = module.hgx.numa_binds
      content {
        gpus = bind.value.gpus
        node = bind.value.node
      }
    }
  }
  slurm {
    gres = true
  }
}
