# shellcheck shell=sh
# apt_hold.sh HOLDS_FILE NAME...
#
# Puts each NAME on hold and records it in HOLDS_FILE, gpuform's record of
# the holds it set, so that a hold someone else set is told from its own.
set -eu
holds_file=$1
shift
apt-mark hold "$@" >/dev/null
f="$R$holds_file"
mkdir -p -- "${f%/*}"
{ cat "$f" 2>/dev/null || true; for n in "$@"; do printf '%s\n' "$n"; done; } | sort -u >"$f.new"
mv -f -- "$f.new" "$f"
