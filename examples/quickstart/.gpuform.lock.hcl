# This file is maintained by "gpuform lock". Commit it with the spec;
# it records the exact releases each node runs.

node "quickstart" {
  driver                   = "580.159.03"
  fabric_manager           = "580.159.03"
  cuda                     = "12.8.1"
  nccl                     = "2.25.1"
  nvidia_container_toolkit = "1.19.1"
}
