package resource

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
)

// RegistryCheckSeconds bounds the reachability check of one image's
// registry on the node (curl --max-time, wget -T): a registry that takes
// the connection and never answers must not hang plan.
const RegistryCheckSeconds = 20

// imageReachableCheck is the Check of im's pull step: the registry the
// node pulls im from answers on the node, as the pull will ask it. Any
// HTTP answer of its /v2/ endpoint counts (200, or the 401 that asks for
// credentials: the node's own credentials are the runtime's business and
// are not read); a name that does not resolve, a refused or timed-out
// connection or a failed TLS handshake is the step's failure, said in
// curl's (or wget's) words. The answer is discarded, its size capped by
// curl, and the time bounded by RegistryCheckSeconds.
//
// Where the node pulls through a mirror its runtime is configured with
// (containerd's hosts.toml for the registry or _default, Docker's
// registry-mirrors for Docker Hub), the registry itself is not what the
// pull reaches: the check says it could not tell rather than fail an
// air-gapped node whose mirror works. A node with neither curl nor wget
// cannot tell either.
func imageReachableCheck(im ImageRef, runtime string) string {
	reg := "registry"
	url := ""
	if r, err := name.NewRepository(im.Repo); err == nil {
		reg = r.RegistryStr()
		url = r.Registry.Scheme() + "://" + reg + "/v2/"
	}
	what := fmt.Sprintf("container image %s", im.Ref)
	return fmt.Sprintf(`R=${GPUFORM_ROOT:-}
reg=%s
url=%s
what=%s
case %s in
containerd)
	for d in "$reg" _default; do
		if [ -f "$R/etc/containerd/certs.d/$d/hosts.toml" ]; then
			echo "unchecked: $what: containerd pulls from $reg as /etc/containerd/certs.d/$d/hosts.toml says, not from $reg directly"
			exit 0
		fi
	done
	;;
docker)
	if [ "$reg" = %s ] && grep -qs registry-mirrors "$R/etc/docker/daemon.json"; then
		echo "unchecked: $what: Docker pulls it through the registry-mirrors of /etc/docker/daemon.json"
		exit 0
	fi
	;;
esac
[ -n "$url" ] || { echo "$what: not an image reference gpuform can reach" >&2; exit 1; }
if command -v curl >/dev/null 2>&1; then
	if e=$(curl -sS -o /dev/null --max-time %d --max-filesize 1048576 "$url" 2>&1); then
		exit 0
	fi
elif command -v wget >/dev/null 2>&1; then
	e=$(wget -q -T %d -t 1 -O /dev/null "$url" 2>&1)
	case $? in
	0 | 6 | 8) exit 0 ;; # an answer, a login asked for, an HTTP error: the registry answered
	esac
	e=${e:-wget could not connect}
else
	echo "unchecked: $what: neither curl nor wget on the host to ask $reg"
	exit 0
fi
e=$(printf '%%s' "$e" | tr '\n\r\t' '   ' | cut -c1-300)
echo "$what: registry $reg cannot be reached from this host ($e), so its pull would fail: make it reachable (or configure a mirror), or put the image on the node at its digest first (gpuform pulls no image the node holds)" >&2
exit 1
`, q(reg), q(url), q(what), q(runtime), q(name.DefaultRegistry), RegistryCheckSeconds, RegistryCheckSeconds)
}
