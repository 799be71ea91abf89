package facts

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseImages reads the runtimes' image listings: Docker's rows as the
// probe's --format writes them (an image pulled by digest and tagged shows
// once per reference), ctr's table with its header and a size with a
// space in it, and a listing that failed.
func TestParseImages(t *testing.T) {
	a := "sha256:" + strings.Repeat("a", 64)
	b := "sha256:" + strings.Repeat("b", 64)
	cases := map[string]struct {
		record string
		want   map[string]*ImageStore
	}{
		"docker": {
			"@@n1 cmd docker-images 0\n" +
				"sha256:1111 nvcr.io/nvidia/pytorch 25.02-py3 " + a + "\n" +
				"sha256:1111 nvcr.io/nvidia/pytorch <none> " + a + "\n" +
				"sha256:2222 localbuild latest <none>\n" +
				"garbage\n@@n1 eof\n",
			map[string]*ImageStore{"docker": {Images: []LocalImage{
				{ID: "sha256:1111", Tags: []string{"nvcr.io/nvidia/pytorch:25.02-py3"}, Digests: []string{"nvcr.io/nvidia/pytorch@" + a}},
				{ID: "sha256:2222", Tags: []string{"localbuild:latest"}},
			}}},
		},
		"containerd": {
			"@@n1 cmd ctr-images 0\n" +
				"REF                                 TYPE                                            DIGEST  SIZE      PLATFORMS   LABELS\n" +
				"nvcr.io/nvidia/pytorch:25.02-py3 application/vnd.oci.image.index.v1+json " + b + " 9.2 GiB linux/amd64,linux/arm64 -\n" +
				"nvcr.io/nvidia/pytorch@" + b + " application/vnd.oci.image.index.v1+json " + b + " 9.2 GiB linux/amd64,linux/arm64 -\n" +
				"@@n1 eof\n",
			map[string]*ImageStore{"containerd": {Images: []LocalImage{
				{ID: b, Tags: []string{"nvcr.io/nvidia/pytorch:25.02-py3"}, Digests: []string{"nvcr.io/nvidia/pytorch@" + b}},
			}}},
		},
		"docker refuses": {
			"@@n1 cmd docker-images 1\npermission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock\n@@n1 eof\n",
			map[string]*ImageStore{"docker": {Error: "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock", Images: []LocalImage{}}},
		},
		"no runtime": {"", nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var n *Node
			if tc.record == "" {
				n = parseOne(t)
			} else {
				n = parseOne(t, tc.record)
			}
			if diff := cmp.Diff(tc.want, n.Images); diff != "" {
				t.Errorf("images (-want +got):\n%s", diff)
			}
		})
	}
}
