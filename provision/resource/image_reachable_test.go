package resource

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/sshtest"
)

// runCheck runs a pull step's check with /bin/sh against root, as a node
// would, and returns its exit status, stdout and stderr.
func runCheck(t *testing.T, script, root string) (int, string, string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = append(os.Environ(), "GPUFORM_ROOT="+root)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

// TestImageReachableCheck runs the check of an image pull against a port
// nothing listens on (refused: the step's failure, in curl's words), one
// that answers HTTP, and a containerd node that pulls through a mirror
// (not checked, and said so).
func TestImageReachableCheck(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		// scripts/test.sh installs curl, so CI fails here instead of skipping.
		sshtest.Missing(t, "curl is not installed (apt-get install curl)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	root := t.TempDir()
	im := ImageRef{Ref: closed + "/a/b:1", Repo: closed + "/a/b", Tag: "1", Digest: "sha256:" + strings.Repeat("0", 64)}

	code, _, errOut := runCheck(t, imageReachableCheck(im, "docker"), root)
	if code != 1 || !strings.Contains(errOut, "container image "+im.Ref+": registry "+closed+" cannot be reached from this host (curl: (7)") {
		t.Errorf("refused: exit %d, %s", code, errOut)
	}

	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))
			c.Close()
		}
	}()
	up := srv.Addr().String()
	im2 := ImageRef{Ref: up + "/a/b:1", Repo: up + "/a/b", Tag: "1", Digest: im.Digest}
	if code, out, errOut := runCheck(t, imageReachableCheck(im2, "enroot"), root); code != 0 || out != "" {
		t.Errorf("a registry that asks for a login answered: exit %d, %s%s", code, out, errOut)
	}

	if err := os.MkdirAll(filepath.Join(root, "etc/containerd/certs.d/_default"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/containerd/certs.d/_default/hosts.toml"), []byte("server = \"https://mirror.example\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCheck(t, imageReachableCheck(im, "containerd"), root)
	if code != 0 || !strings.HasPrefix(out, "unchecked: container image "+im.Ref+": containerd pulls from "+closed+" as /etc/containerd/certs.d/_default/hosts.toml says") {
		t.Errorf("containerd with a mirror: exit %d, %s", code, out)
	}
}
