# shellcheck shell=sh
# dcgmi_diag.sh SECONDS LEVEL: runs "dcgmi diag -r LEVEL -j" within
# SECONDS (timeout's own status, 124, or 137 after its KILL, when it took
# too long). Without dcgmi it exits EXIT_NOT_FOUND.
seconds=$1 level=$2
command -v dcgmi >/dev/null 2>&1 || exit "$EXIT_NOT_FOUND"
exec timeout -k 10 "$seconds" dcgmi diag -r "$level" -j
