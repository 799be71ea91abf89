# shellcheck shell=sh
# run_command.sh COMMAND: runs COMMAND, one command line (or an && chain)
# that gpuform built from quoted words, in this shell: what puts a removed
# file's absence into effect (systemctl daemon-reload).
set -eu
eval "$1"
