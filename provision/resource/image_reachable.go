package resource

import (
	"fmt"
	"strconv"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/gpuform/gpuform/provision/nodesh"
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
// cannot tell either. The check is scripts/image_reachable.sh.
func imageReachableCheck(im ImageRef, runtime string) string {
	reg := "registry"
	url := ""
	if r, err := name.NewRepository(im.Repo); err == nil {
		reg = r.RegistryStr()
		url = r.Registry.Scheme() + "://" + reg + "/v2/"
	}
	what := fmt.Sprintf("container image %s", im.Ref)
	return nodesh.Script(imageReachableScript, []string{reg, url, what, runtime, name.DefaultRegistry, strconv.Itoa(RegistryCheckSeconds)})
}
