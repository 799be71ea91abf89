# An air-gapped lock (docs/guide/containers.md, "Offline and air-gapped
# sites"): the node's job image is a tag no lock file pins yet, and this
# machine cannot reach nvcr.io. `gpuform lock -images=false` asks no
# registry: it records the package releases the simulated HGX H100
# (sim://hgx-h100-stale) runs and leaves the tag unpinned, with a warning
# naming it, so plan does not pull it and `gpuform lock -check` fails on it.

module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

# gpuform-ignore: numa_balancing -- a lock example: it pins the image, the host setup is the quickstart's subject
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
    images = ["nvcr.io/nvidia/pytorch:25.02-py3"]
  }
}
