package verify

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/transport"
)

// ImageHashTimeout bounds the hashing of one image file at the full tier:
// sha256sum reads a 20 GB squashfs in about a minute on a node's local
// NVMe, and a file on slow shared storage that takes longer is an error,
// never a pass. The tier's budget bounds all of them together.
const ImageHashTimeout = 5 * time.Minute

// ImageContent is the sha256 of an image file's content, as sha256sum
// printed it on the node at verify -tier full, or why it could not be had.
type ImageContent struct {
	// SHA256 is the hex digest; "" when Error says why there is none.
	SHA256 string
	// Error says why the file was not hashed (timeout, unreadable).
	Error string
}

// HashImageFiles hashes, with sha256sum on the node, the file in image_dir
// of each pinned image of exp's spec that the facts show (enroot and
// Apptainer): the content, not the name, is what the full tier judges.
// The result is keyed by the file's path as the node sees it. Each file
// gets timeout; the run stops at ctx's end. A hostRoot other than "" is
// where the node's / is mounted on the machine t runs on (verify --local
// -host-root): the files are read there, resolved inside it as the probe
// resolves them, by this machine's own sha256sum.
func HashImageFiles(ctx context.Context, t transport.Transport, exp Expectation, f *facts.Node, hostRoot string, become bool, timeout time.Duration) map[string]ImageContent {
	out := map[string]ImageContent{}
	if exp.Spec == nil || f == nil {
		return out
	}
	rt := resource.ImageRuntime(exp.Spec)
	if rt != facts.RuntimeEnroot && rt != facts.RuntimeApptainer {
		return out
	}
	store := resource.NodeImages(exp.Spec, f)
	pinned, _ := resource.PinnedImages(exp.Spec)
	for _, im := range pinned {
		li := resource.NodeFile(exp.Spec, store, im)
		if li == nil {
			continue
		}
		if _, done := out[li.ID]; !done {
			out[li.ID] = hashFile(ctx, t, li.ID, hostRoot, become, timeout)
		}
	}
	return out
}

// hashFileScript hashes one file on the node (scripts/hash_file.sh).
//
//go:embed scripts/hash_file.sh
var hashFileScript string

// hashOut is sha256sum's line: the digest, two spaces, the name.
var hashOut = lazyre.New(`^([0-9a-f]{64}) `)

func hashFile(ctx context.Context, t transport.Transport, file, hostRoot string, become bool, timeout time.Duration) ImageContent {
	if strings.ContainsAny(file, "'\n") || !strings.HasPrefix(file, "/") {
		return ImageContent{Error: fmt.Sprintf("%q is no path gpuform hashes", file)}
	}
	secs := int64((timeout + time.Second - 1) / time.Second)
	// The file is opened by sha256sum under timeout, never by the shell:
	// a FIFO planted at the name would block an open before the limit.
	script := nodesh.Script(hashFileScript, []string{file, strconv.FormatInt(secs, 10)}, facts.Resolver)
	rctx, cancel := context.WithTimeout(ctx, timeout+15*time.Second)
	defer cancel()
	cmd := transport.Command{Script: script, Become: become}
	if hostRoot != "" {
		// resolve.sh's root prefix: the file as the node sees it.
		cmd.Env = map[string]string{"GPUFORM_ROOT": hostRoot}
	}
	res, err := t.Run(rctx, cmd)
	switch {
	case err != nil && rctx.Err() != nil:
		return ImageContent{Error: fmt.Sprintf("sha256sum of %s did not finish within %s", file, timeout)}
	case err != nil:
		return ImageContent{Error: fmt.Sprintf("sha256sum of %s could not run: %s", file, transport.HostText(err.Error()))}
	case res.ExitCode == nodesh.ExitTimedOut || res.ExitCode == nodesh.ExitTimedOutKilled || res.ExitCode == -1:
		return ImageContent{Error: fmt.Sprintf("sha256sum of %s did not finish within %s", file, timeout)}
	case res.ExitCode != 0:
		msg := strings.TrimSpace(transport.HostText(string(res.Stderr)))
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return ImageContent{Error: fmt.Sprintf("sha256sum of %s exited %d: %s", file, res.ExitCode, msg)}
	}
	m := hashOut.FindSubmatch(res.Stdout)
	if m == nil {
		return ImageContent{Error: fmt.Sprintf("sha256sum of %s printed no digest", file)}
	}
	return ImageContent{SHA256: string(m[1])}
}
