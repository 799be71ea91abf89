# shellcheck shell=sh
# file_remove.sh DIR NAME EXPECT PATH BACKUP_DIR
#
# Removes PATH (NAME in DIR, as the node sees them) after copying it under
# BACKUP_DIR; removing a missing file succeeds. A symlink is removed
# itself, not its target. It refuses when the file's content is no longer
# what the plan read (EXPECT: its sha256, or "absent").
# shellcheck disable=SC2154 # _r and _e are resolve_in_root's (provision/facts/resolve.sh)
set -eu
dir=$1 name=$2 expect=$3 path=$4 backup_dir=$5
if [ -n "$R" ]; then R=$(cd -P -- "$R" && pwd -P); fi
resolve_in_root "$dir" || fail "$dir: $_e"
p=$_r/$name
[ -e "$p" ] || [ -h "$p" ] || exit 0
content_sha256 "$p"
if [ "$sha" != "$expect" ]; then
	fail "$path changed since this change was planned; run gpuform plan again"
fi
if [ -e "$p" ]; then
	backup_current "$backup_dir"
fi
rm -f -- "$p"
