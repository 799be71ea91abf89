# A GPU that fell off the bus (docs/guide/bad-node.md, "What a failure
# means and what to do"): sim://hgx-h100-xid79 lost GPU 4
# (00000000:9D:00.0) with an Xid 79 in its kernel log. verify fails
# nvml.gpu_count and kernel.xid, each with what it means and what to do,
# and matches the other GPUs by bus id.

module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

# gpuform-ignore: numa_balancing -- a failure example: it only verifies, the host setup is the quickstart's subject
node "xid79" {
  hosts    = ["sim://hgx-h100-xid79"]
  hardware = module.hgx.hardware
}
