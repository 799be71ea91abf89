# shellcheck shell=sh
# nic_irq_pin.sh SCRIPT: runs gpuform's NIC interrupt script SCRIPT (under
# the root) to pin the RDMA NICs' interrupts to their NUMA nodes' CPUs now;
# its unit runs it at every boot.
set -eu
sh "$R$1" pin "$R"
