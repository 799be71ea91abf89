# A node whose spec installs (pins) DCGM, on a host that has none yet:
# verify -tier quick must fail dcgm.diag, never skip it as optional.
module "stack" {
  source = "gpuform/stack-cuda12-8"
}

node "pinned" {
  hosts = ["sim://hgx-h100-stale"]

  dcgm {
    version = module.stack.dcgm_version
  }
}
