# shellcheck shell=sh
# image_reachable.sh REGISTRY URL WHAT RUNTIME DEFAULT_REGISTRY SECONDS
#
# The check of an image's pull step: the registry REGISTRY the node pulls
# the image WHAT from answers at URL (its /v2/ endpoint) on the node, as
# the pull will ask it. Any HTTP answer counts (200, or the 401 that asks
# for credentials); a name that does not resolve, a refused or timed-out
# connection or a failed TLS handshake is the step's failure, said in
# curl's (or wget's) words. The answer is discarded, its size capped, and
# the time bounded by SECONDS. Where RUNTIME (containerd, docker) pulls
# through a mirror it is configured with, the registry itself is not what
# the pull reaches: the check says it could not tell ("unchecked: WHY")
# rather than fail an air-gapped node whose mirror works; so does a node
# with neither curl nor wget. DEFAULT_REGISTRY is Docker Hub's name.
# It changes nothing and runs without set -e: every status is its own.
reg=$1 url=$2 what=$3 runtime=$4 default_registry=$5 seconds=$6
case $runtime in
containerd)
	for d in "$reg" _default; do
		if [ -f "$R/etc/containerd/certs.d/$d/hosts.toml" ]; then
			echo "unchecked: $what: containerd pulls from $reg as /etc/containerd/certs.d/$d/hosts.toml says, not from $reg directly"
			exit 0
		fi
	done
	;;
docker)
	if [ "$reg" = "$default_registry" ] && grep -qs registry-mirrors "$R/etc/docker/daemon.json"; then
		echo "unchecked: $what: Docker pulls it through the registry-mirrors of /etc/docker/daemon.json"
		exit 0
	fi
	;;
esac
[ -n "$url" ] || { echo "$what: not an image reference gpuform can reach" >&2; exit 1; }
if command -v curl >/dev/null 2>&1; then
	if e=$(curl -sS -o /dev/null --max-time "$seconds" --max-filesize 1048576 "$url" 2>&1); then
		exit 0
	fi
elif binary_path wget; then
	# wget by its path: busybox's applet has other exit statuses.
	e=$(run_binary wget -q -T "$seconds" -t 1 -O /dev/null "$url" 2>&1)
	case $? in
	0 | 6 | 8) exit 0 ;; # an answer, a login asked for, an HTTP error: the registry answered
	esac
	e=${e:-wget could not connect}
else
	echo "unchecked: $what: neither curl nor wget on the host to ask $reg"
	exit 0
fi
e=$(printf '%s' "$e" | tr '\n\r\t' '   ' | cut -c1-300)
echo "$what: registry $reg cannot be reached from this host ($e), so its pull would fail: make it reachable (or configure a mirror), or put the image on the node at its digest first (gpuform pulls no image the node holds)" >&2
exit 1
