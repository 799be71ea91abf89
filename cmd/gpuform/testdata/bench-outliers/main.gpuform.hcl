# Three simulated HGX H100 nodes in one group: two healthy
# (sim://hgx-h100-stale) and one whose GPU 5 (0000:c3:00.0) trained its
# PCIe link at x8 (sim://hgx-h100-degraded): its host copies are half its
# peers'.
node "group" {
  hosts = ["sim://hgx-h100-stale/a", "sim://hgx-h100-stale/b", "sim://hgx-h100-degraded/c"]
}
