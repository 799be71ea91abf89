# Locking a release no host runs yet (docs/guide/pin-the-stack.md): the
# spec names the driver branch "580", the simulated HGX H100
# (sim://hgx-h100-stale) still runs 535, and its package repository offers
# 580.95.05 and 580.159.03. Plain `gpuform lock` cannot pin the branch (no
# host runs it); `gpuform lock -upgrade` pins 580.159.03, the newest the
# repository offers, and the next plan installs that release.

module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

# gpuform-ignore: numa_balancing -- a lock example: it pins the driver, the host setup is the quickstart's subject
node "train" {
  hosts    = ["sim://hgx-h100-stale"]
  hardware = module.hgx.hardware

  driver {
    version          = "580" # a branch: the lock file says which release
    kernel_module    = "open"
    persistence_mode = true
    fabric_manager   = true # NVSwitch systems need nvidia-fabricmanager, same version as the driver
  }
}
