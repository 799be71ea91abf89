# shellcheck shell=sh
# agent.sh ACTION DIR DEFAULT_DIR NAME
#
# Keeps the gpuform agent binary NAME ("agent-<sha256>") in DIR on the
# node, or in $HOME/DEFAULT_DIR when DIR is empty ($HOME is the remote
# user's, expanded here). ACTION is one of:
#   find    print the path, then sha256sum's line of the file when it is
#           there
#   upload  write standard input there atomically (a temporary file in the
#           same directory, mode 0700, renamed over), then print its
#           sha256sum line
dir=$2 default_dir=$3 name=$4
if [ -n "$dir" ]; then d=$dir; else d=$HOME/$default_dir; fi
case $1 in
find)
	f="$d/$name"
	printf '%s\n' "$f"
	if [ -f "$f" ]; then sha256sum <"$f"; fi
	;;
upload)
	set -e
	umask 077
	mkdir -p "$d"
	tmp="$d/.$name.$$"
	trap 'rm -f "$tmp"' EXIT
	cat >"$tmp"
	chmod 0700 "$tmp"
	mv -f "$tmp" "$d/$name"
	sha256sum <"$d/$name"
	;;
*) fail "agent.sh: unknown action $1" ;;
esac
