# shellcheck shell=sh
# module_load.sh MODULE: loads the kernel module MODULE.
set -eu
run_binary modprobe "$1"
