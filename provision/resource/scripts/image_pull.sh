# shellcheck shell=sh
# image_pull.sh RUNTIME BY_DIGEST TAGGED
#
# Pulls the image BY_DIGEST (repo@sha256:...) with RUNTIME ("containerd";
# anything else is Docker) and, when TAGGED (repo:tag) is not empty, points
# that tag at it, so that a job that runs the tag gets the pinned build
# without a pull of its own. The runtime pulls with the credentials
# configured on the node; gpuform sends none.
set -e
runtime=$1 by_digest=$2 tagged=$3
case $runtime in
containerd)
	# nerdctl reads the node's Docker credentials; ctr is what every
	# containerd install has.
	if command -v nerdctl >/dev/null 2>&1; then
		nerdctl --namespace k8s.io pull "$by_digest"
		if [ -n "$tagged" ]; then nerdctl --namespace k8s.io tag "$by_digest" "$tagged"; fi
	else
		ctr -n k8s.io images pull "$by_digest"
		if [ -n "$tagged" ]; then ctr -n k8s.io images tag --force "$by_digest" "$tagged"; fi
	fi
	;;
*)
	docker pull "$by_digest"
	if [ -n "$tagged" ]; then docker tag "$by_digest" "$tagged"; fi
	;;
esac
