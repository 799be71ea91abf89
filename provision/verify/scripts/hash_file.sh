# shellcheck shell=sh
# hash_file.sh FILE SECONDS
#
# Prints sha256sum's line for FILE (as the node sees it, resolved inside
# the root by facts' resolve.sh, which is sent with it), within SECONDS.
# The file is opened by sha256sum under timeout, never by the shell: a
# FIFO planted at the name would block an open before the limit. Exits 3,
# saying why, when FILE does not resolve or is not a regular file;
# timeout's own status (124, or 137 after its KILL) when it took too long.
# shellcheck disable=SC2154 # _r and _e are resolve_path's (provision/facts/resolve.sh)
file=$1 seconds=$2
resolve_path "$file" || { printf '%s\n' "$_e" >&2; exit 3; }
[ -f "$_r" ] || { echo "not a regular file" >&2; exit 3; }
exec timeout -k 5 "$seconds" sha256sum -- "$_r"
