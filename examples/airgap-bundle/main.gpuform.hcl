# An air-gapped site's bundle (README.md, "Air-gapped sites"): the node's
# packages are pinned exactly, so `gpuform bundle` on a host with its
# repositories gathers those releases and what they depend on into one
# signed apt repository, and `gpuform apply -bundle` installs them on
# nodes that have no network and no sources of their own.
#
# The host here is the simulated HGX H100 so that validate, lint and plan
# run anywhere; bundle and apply -bundle need hosts reached over SSH that
# run apt (replace hosts with yours).

module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

# gpuform-ignore: numa_balancing -- a bundle example: it pins packages, the host setup is the quickstart's subject
node "train" {
  hosts    = ["sim://hgx-h100-stale"]
  hardware = module.hgx.hardware

  container {
    runtime                  = "docker"
    nvidia_container_toolkit = "1.19.1"
    default_shm_size         = "16GiB" # Docker's 64 MB default breaks NCCL and DataLoader workers
    ulimits = {
      memlock = "unlimited" # RDMA pins memory
    }
  }
}
