# The HGX H100 hardware with no NVIDIA software installed (sim://no-driver).
node "fresh" {
  hosts = ["sim://no-driver"]
}
