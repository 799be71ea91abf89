# shellcheck shell=sh
# record_read.sh PATH MAX: prints the burn-in record at PATH (under the
# root) to standard output, at most MAX+1 bytes so that the reader can tell
# a file over its bound from one that fits. A node without the file exits
# EXIT_NOT_OFFERED; one whose file cannot be read exits EXIT_OS_ERROR.
set -eu
path=$1 max=$2
f="$R$path"
[ -e "$f" ] || exit "$EXIT_NOT_OFFERED"
if ! { [ -f "$f" ] && [ -r "$f" ]; }; then fail "$path is not a readable file"; fi
exec head -c "$((max + 1))" "$f"
