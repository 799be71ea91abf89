# shellcheck shell=sh
# dpkg_configure.sh LOCK_TIMEOUT
#
# Finishes an interrupted dpkg run (dpkg --configure -a), keeping the
# configuration files an operator edited. dpkg has no lock timeout of its
# own: it waits up to LOCK_TIMEOUT seconds for another package manager as
# apt's DPkg::Lock::Timeout does. It fails, with dpkg's words, when dpkg
# still reports a package left half-configured.
set -eu
lock_timeout=$1
export DEBIAN_FRONTEND=noninteractive
i=0
while ! out=$(run_binary dpkg --force-confold --configure -a 2>&1); do
	case $out in *"lock"*) ;; *) break ;; esac
	i=$((i + 1))
	[ $i -lt "$lock_timeout" ] || break
	sleep 1
done
if [ -n "$(run_binary dpkg --audit 2>/dev/null)" ]; then
	printf '%s\n' "$out" >&2
	echo "dpkg was interrupted and 'dpkg --configure -a' did not finish it; fix the package named above, then run 'dpkg --configure -a' on the node" >&2
	exit 1
fi
