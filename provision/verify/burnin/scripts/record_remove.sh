# shellcheck shell=sh
# record_remove.sh PATH: removes the burn-in record at PATH (under the
# root) before a new burn-in starts, and flushes its directory, so a
# burn-in that does not finish leaves no record that qualifies the node.
# A node without the record has nothing to remove.
set -eu
path=$1
f="$R$path"
dir=${f%/*}
[ -e "$f" ] || [ -L "$f" ] || exit 0
rm -f "$f" || fail "cannot remove $path"
sync "$dir" 2>/dev/null || sync
