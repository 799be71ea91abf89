# shellcheck shell=sh
# cdi_generate.sh OUTPUT: writes the CDI specification of the node's GPUs
# to OUTPUT. Without a running driver nvidia-ctk fails on NVML and says so.
set -eu
nvidia-ctk cdi generate --output="$1"
