# sim://hgx-h100-notools: the captures of hgx-h100-stale, but perftest
# (ib_write_bw) and fio not installed; bench { tools } installs them.
node "tools" {
  hosts = ["sim://hgx-h100-notools"]

  bench {
    tools = ["perftest", "fio"]
    storage "checkpoint" {
      path = "/var/tmp"
    }
  }
}
