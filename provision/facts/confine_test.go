package facts_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/transport"
)

// TestProbeStaysInRoot builds roots whose links try to leave the root and
// checks that no byte of a file outside it reaches the probe's output, and
// that links inside the root are followed as chroot would follow them.
func TestProbeStaysInRoot(t *testing.T) {
	const token = "SECRET-OUTSIDE-THE-ROOT"
	outsideDir := t.TempDir()
	outside := filepath.Join(outsideDir, "passwd")
	if err := os.WriteFile(outside, []byte("root:x:0:0:"+token+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	up := strings.Repeat("../", 12)
	const inside = `{"inside": "root"}` + "\n"
	tests := map[string]struct {
		// setup builds the root; daemon.json is the file read.
		setup func(t *testing.T, root string)
		// want is what the probe reports for daemon.json: its content, or
		// "missing", or an error containing the text after "error: ".
		want string
		// resolved is where the probe says daemon.json leads.
		resolved string
	}{
		"relative .. link": {setup: func(t *testing.T, root string) {
			link(t, root, "etc/docker/daemon.json", up+strings.TrimPrefix(outside, "/"))
		}, want: "missing", resolved: outside},
		"absolute link": {setup: func(t *testing.T, root string) {
			link(t, root, "etc/docker/daemon.json", outside)
		}, want: "missing", resolved: outside},
		"symlinked directory component": {setup: func(t *testing.T, root string) {
			link(t, root, "etc/docker", up+strings.TrimPrefix(outsideDir, "/"))
			if err := os.Symlink("passwd", filepath.Join(outsideDir, "daemon.json")); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
		}, want: "missing", resolved: outsideDir + "/daemon.json"},
		"chain of 12 links inside the root": {setup: func(t *testing.T, root string) {
			write(t, root, "srv/real.json", inside)
			prev := "/srv/real.json"
			for i := 0; i < 12; i++ {
				name := filepath.Join("srv", "l"+strings.Repeat("x", i))
				link(t, root, name, prev)
				prev = "/" + name
			}
			link(t, root, "etc/docker/daemon.json", "../.."+prev)
		}, want: inside, resolved: "/srv/real.json"},
		"link loop": {setup: func(t *testing.T, root string) {
			link(t, root, "etc/docker/daemon.json", "a")
			link(t, root, "etc/docker/a", "daemon.json")
		}, want: "error: too many levels of symbolic links"},
		"41 links": {setup: func(t *testing.T, root string) {
			write(t, root, "srv/real.json", inside)
			prev := "/srv/real.json"
			for i := 0; i < 40; i++ {
				name := filepath.Join("srv", "l"+strings.Repeat("x", i))
				link(t, root, name, prev)
				prev = "/" + name
			}
			link(t, root, "etc/docker/daemon.json", prev)
		}, want: "error: too many levels of symbolic links"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, "etc/docker"), 0o755); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, root)
			// Plain, not compressed, so that the stream can be searched
			// for the token: what the probe reads does not depend on it.
			res, err := local.New("root").Run(context.Background(), transport.Command{Script: facts.Script(resource.Reads()), Env: map[string]string{"GPUFORM_ROOT": root, "GPUFORM_PROBE_NONCE": "n1", "GPUFORM_PROBE_PLAIN": "1"}})
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("probe: %v %d %s", err, res.ExitCode, res.Stderr)
			}
			if strings.Contains(string(res.Stdout), token) || strings.Contains(string(res.Stdout), "726f6f74") {
				t.Fatalf("the probe read a file outside the root:\n%s", res.Stdout)
			}
			n, err := facts.Parse(res.Stdout)
			if err != nil {
				t.Fatal(err)
			}
			cf, ok := n.ConfigFile("/etc/docker/daemon.json")
			if !ok {
				t.Fatal("no config record for daemon.json")
			}
			switch {
			case strings.HasPrefix(tc.want, "error: "):
				if !strings.Contains(cf.Error, strings.TrimPrefix(tc.want, "error: ")) {
					t.Errorf("error %q, want %q", cf.Error, tc.want)
				}
			case tc.want == "missing":
				if cf.Exists || n.Docker.Present {
					t.Errorf("daemon.json read as %+v / %+v, want missing", cf, n.Docker)
				}
			default:
				if string(cf.Data) != tc.want || n.Docker.Raw != tc.want {
					t.Errorf("daemon.json %q, want %q", cf.Data, tc.want)
				}
			}
			if tc.resolved != "" && cf.Resolved != tc.resolved {
				t.Errorf("resolved %q, want %q", cf.Resolved, tc.resolved)
			}
		})
	}
}

func link(t *testing.T, root, name, target string) {
	t.Helper()
	p := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(p)
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, root, name, content string) {
	t.Helper()
	p := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestProbeReadsBytesExactly reads a file with a NUL byte, bytes that are
// not UTF-8, CRLF and no final newline, with its mode and owner.
func TestProbeReadsBytesExactly(t *testing.T) {
	root := t.TempDir()
	content := "UUID=1 / ext4 defaults 0 1\r\n/dev/sdc1 /data xfs defaults 0 2\x00\n# caf\xe9 \xff  \ntmpfs /dev/shm tmpfs defaults 0 0"
	write(t, root, "etc/fstab", content)
	if err := os.Chmod(filepath.Join(root, "etc/fstab"), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := facts.Probe(context.Background(), local.New("root"), facts.Options{Reads: resource.Reads(), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := n.ConfigFile("/etc/fstab")
	if string(cf.Data) != content {
		t.Errorf("fstab read as %q, want %q", cf.Data, content)
	}
	if oct, _ := cf.Octal(); oct != "0600" || cf.UID != "0" && os.Geteuid() == 0 {
		t.Errorf("mode %s (%s) owner %s", cf.Mode, oct, cf.UID)
	}
	if n.Shm.FstabLine != "tmpfs /dev/shm tmpfs defaults 0 0" {
		t.Errorf("shm line %q", n.Shm.FstabLine)
	}
}
