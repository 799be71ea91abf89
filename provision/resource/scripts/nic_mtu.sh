# shellcheck shell=sh
# nic_mtu.sh NETDEV MTU: sets the MTU of NETDEV until the next boot.
set -eu
run_binary ip link set dev "$1" mtu "$2"
