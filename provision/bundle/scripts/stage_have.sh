# shellcheck shell=sh
# stage_have.sh DIR FILE...
#
# Makes DIR (under the root) the bundle repository's directory on the
# node, disables what a stage before left there (its apt.conf goes first:
# a repository being copied is never named by one), and prints
# "SHA256 FILE" for each FILE (a path under DIR) already in DIR, so that only the rest is
# copied.
set -eu
d="$R$1"
shift
mkdir -p -- "$d"
rm -f -- "$d/apt.conf" "$d/repos.d/gpuform-bundle.repo"
for f in "$@"; do
	[ -f "$d/$f" ] || continue
	sha256sum -- "$d/$f" | { read -r sum _; printf '%s %s\n' "$sum" "$f"; }
done
