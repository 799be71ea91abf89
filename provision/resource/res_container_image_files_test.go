package resource

import (
	"strings"
	"testing"
)

// TestEnrootURI: the reference enroot imports names the registry before
// "#" (none for Docker Hub, enroot's default) and puts the digest where
// the tag goes, the form enroot 3.x and 4.x both read.
func TestEnrootURI(t *testing.T) {
	d := "sha256:" + strings.Repeat("a", 64)
	cases := map[string]struct{ repo, want string }{
		"ngc":         {"nvcr.io/nvidia/pytorch", "docker://nvcr.io#nvidia/pytorch:" + d},
		"port":        {"127.0.0.1:5000/nvidia/cuda", "docker://127.0.0.1:5000#nvidia/cuda:" + d},
		"docker hub":  {"docker.io/nvidia/cuda", "docker://nvidia/cuda:" + d},
		"hub, short":  {"nvidia/cuda", "docker://nvidia/cuda:" + d},
		"hub library": {"docker.io/library/ubuntu", "docker://library/ubuntu:" + d},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := EnrootURI(ImageRef{Repo: tc.repo, Digest: d}); got != tc.want {
				t.Errorf("EnrootURI(%s) = %s, want %s", tc.repo, got, tc.want)
			}
		})
	}
}
