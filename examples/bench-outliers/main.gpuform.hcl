# Peer outliers (docs/guide/bench.md): three simulated HGX H100 nodes in
# one group, two healthy (sim://hgx-h100-stale) and one whose GPU 5
# (00000000:C3:00.0) trained its PCIe link at x8
# (sim://hgx-h100-degraded): its host copies are half its peers', so
# bench names it as a peer outlier, and its x8 link as the bottleneck.

module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

# gpuform-ignore: numa_balancing -- a bench example: it only measures, the host setup is the quickstart's subject
node "group" {
  hosts    = ["sim://hgx-h100-stale/a", "sim://hgx-h100-stale/b", "sim://hgx-h100-degraded/c"]
  hardware = module.hgx.hardware
}
