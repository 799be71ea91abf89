# shellcheck shell=sh
# record_write.sh PATH: writes standard input as the burn-in record at PATH
# (under the root), atomically: into a temporary file in the same
# directory, flushed, then renamed over the old record and the directory flushed, so a reader sees
# the old record or the new one, never a part. The directory is made 0755
# and the file 0644 (any user's verify -require-burnin reads it).
set -eu
path=$1
f="$R$path"
dir=${f%/*}
mkdir -p "$dir" || fail "cannot make ${path%/*}"
chmod 0755 "$dir"
tmp=$(mktemp "$dir/.burnin.XXXXXX") || fail "cannot write in ${path%/*}"
trap 'rm -f "$tmp"' EXIT
cat >"$tmp"
chmod 0644 "$tmp"
sync "$tmp" 2>/dev/null || sync
mv -f "$tmp" "$f"
trap - EXIT
# The rename reaches the disk with its directory: without this a crash
# after a passed burn-in could bring back the old record (or none).
sync "$dir" 2>/dev/null || sync
