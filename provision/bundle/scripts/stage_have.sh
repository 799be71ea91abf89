# shellcheck shell=sh
# stage_have.sh DIR <FILES
#
# Makes DIR (under the root) the bundle repository's directory on the
# node, disables what a stage before left there (its apt.conf goes first:
# a repository being copied is never named by one), and prints
# "SHA256 FILE" for each FILE (a path under DIR, one a line on standard
# input: a repository of thousands of files would not fit a command line)
# already in DIR, so that only the rest is copied.
set -eu
d="$R$1"
mkdir -p -- "$d"
rm -f -- "$d/apt.conf" "$d/repos.d/gpuform-bundle.repo"
while IFS= read -r f; do
	if [ -z "$f" ] || [ ! -f "$d/$f" ]; then continue; fi
	sha256sum -- "$d/$f" | { read -r sum _; printf '%s %s\n' "$sum" "$f"; }
done
