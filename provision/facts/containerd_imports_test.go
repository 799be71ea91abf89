package facts_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/resource"
)

// TestProbeContainerdImports: the probe follows config.toml's imports the
// way containerd does (a relative pattern joined to /etc/containerd, the
// matches sorted) and reads each imported file byte for byte, so that plan
// sees the drop-in nvidia-ctk 1.18 and later writes. Before, a drop-in was
// invisible to plan and verify.
func TestProbeContainerdImports(t *testing.T) {
	for name, tc := range map[string]struct {
		config string
		// link makes /etc/containerd/conf.d a symlink to it.
		link  string
		files map[string]string
		want  []facts.ContainerdImport
	}{
		"nvidia-ctk drop-in": {
			config: "imports = [\"/foo/bar/*.toml\", \"/etc/containerd/conf.d/*.toml\"]\nversion = 2\n",
			files:  map[string]string{"etc/containerd/conf.d/99-nvidia.toml": "version = 2\n", "etc/containerd/conf.d/10-site.toml": "version = 2\n", "etc/containerd/conf.d/notes.txt": "x"},
			want: []facts.ContainerdImport{{Pattern: "/foo/bar/*.toml"},
				{Pattern: "/etc/containerd/conf.d/*.toml", Files: []string{"/etc/containerd/conf.d/10-site.toml", "/etc/containerd/conf.d/99-nvidia.toml"}}},
		},
		"relative, multi-line, comments": {
			config: "# site\nimports = [\n  'conf.d/*.toml', # NVIDIA\n  \"/etc/x/*/y.toml\",\n]\nversion = 2\n[plugins]\nimports = [\"/nope\"]\n",
			files:  map[string]string{"etc/containerd/conf.d/99-nvidia.toml": "version = 2\n"},
			want: []facts.ContainerdImport{{Pattern: "/etc/containerd/conf.d/*.toml", Files: []string{"/etc/containerd/conf.d/99-nvidia.toml"}},
				{Pattern: "/etc/x/*/y.toml", Unread: true}},
		},
		"no imports": {config: "version = 2\n", want: []facts.ContainerdImport{}},
		// A quote without its closing one is passed over; the array
		// ends at the ] after its last string.
		"no spaces, tab, unclosed quote": {
			config: "imports=[\t\"/etc/a/*.toml\", 'x,\n  '/etc/b/*.toml']\nimports = [\"/nope\"]\n",
			want:   []facts.ContainerdImport{{Pattern: "/etc/a/*.toml"}, {Pattern: "/etc/b/*.toml"}},
		},
		"last line without its newline": {
			config: "imports = [\"conf.d/*.toml\"]",
			files:  map[string]string{"etc/containerd/conf.d/99-nvidia.toml": "version = 2\n"},
			want:   []facts.ContainerdImport{{Pattern: "/etc/containerd/conf.d/*.toml", Files: []string{"/etc/containerd/conf.d/99-nvidia.toml"}}},
		},
		// conf.d is an absolute symlink to /etc: under a root it leads to
		// the root's /etc, never to this machine's (whose *.conf files
		// would otherwise match).
		"symlinked directory stays in the root": {
			config: "imports = [\"/etc/containerd/conf.d/*.conf\"]\nversion = 2\n",
			link:   "/etc",
			files:  map[string]string{"etc/site.conf": "version = 2\n"},
			want:   []facts.ContainerdImport{{Pattern: "/etc/containerd/conf.d/*.conf", Files: []string{"/etc/containerd/conf.d/site.conf"}}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			write := func(p, s string) {
				t.Helper()
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("etc/containerd/config.toml", tc.config)
			if tc.link != "" {
				if err := os.Symlink(tc.link, filepath.Join(root, "etc/containerd/conf.d")); err != nil {
					t.Fatal(err)
				}
			}
			for p, s := range tc.files {
				write(p, s)
			}
			n, err := facts.Probe(context.Background(), local.New("image"), facts.Options{Reads: resource.Reads(), Root: root})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, n.ContainerdImports); diff != "" {
				t.Errorf("imports (-want +got):\n%s", diff)
			}
			for _, imp := range tc.want {
				for _, f := range imp.Files {
					cf, ok := n.ConfigFile(f)
					if !ok || !cf.Exists || string(cf.Data) != "version = 2\n" {
						t.Errorf("%s: read %v %+v, want its bytes", f, ok, cf)
					}
				}
			}
			if _, ok := n.ConfigFile("/etc/containerd/conf.d/notes.txt"); ok {
				t.Error("a file the pattern does not match was read")
			}
		})
	}
}
