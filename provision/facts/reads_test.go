package facts_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/local"
)

// TestProbeReadsDeclared: the probe reads what a declaration names and
// nothing it does not: a config file byte-exact, a managed file into
// ManagedFiles too, a gpuform file in a declared directory but not in an
// undeclared one, a unit's state, and apt's candidates of the declared
// repository packages only.
func TestProbeReadsDeclared(t *testing.T) {
	root := t.TempDir()
	write := func(p, content string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/os-release", "ID=debian\n")
	write("etc/docker/daemon.json", "{}\n")
	write("etc/toy.conf", "a = 1\n")
	write("etc/toy.d/90-gpuform.conf", "# Managed by gpuform.\nb = 2\n")
	write("etc/toy.d/gpuform-extra.conf", "c = 3\n")
	write("etc/other.d/gpuform.conf", "d = 4\n")
	write("lib/systemd/system/toy.service", "[Unit]\n")
	write("etc/systemd/system/multi-user.target.wants/toy.service", "[Unit]\n")
	write("var/lib/apt/lists/repo_Packages", strings.Join([]string{
		"Package: toy-driver-580", "Version: 580.1-1", "",
		"Package: toy-driver-x", "Version: 1", "",
		"Package: toy-tools", "Version: 2.0", "",
		"Package: unrelated", "Version: 9", "",
	}, "\n"))
	reads := facts.Reads{
		ConfigFiles:  []string{"/etc/docker/daemon.json", "/etc/toy.conf"},
		ManagedFiles: []string{"/etc/toy.d/90-gpuform.conf"},
		ManagedDirs:  []string{"/etc/toy.d"},
		Units:        []string{"toy.service", "absent.service"},
		RepoPackages: []string{"toy-driver-[0-9]+", "toy-tools"},
	}
	n, err := facts.Probe(context.Background(), local.New("localhost"), facts.Options{Reads: reads, Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := n.ConfigFile("/etc/toy.conf"); !ok || string(c.Data) != "a = 1\n" {
		t.Errorf("config file read as %+v, %v", c, ok)
	}
	if c, ok := n.ConfigFile("/etc/toy.d/90-gpuform.conf"); !ok || !strings.HasSuffix(string(c.Data), "b = 2\n") {
		t.Errorf("managed file not read byte-exact: %+v, %v", c, ok)
	}
	wantManaged := map[string]string{
		"/etc/toy.d/90-gpuform.conf":    "# Managed by gpuform.\nb = 2\n",
		"/etc/toy.d/gpuform-extra.conf": "c = 3\n",
	}
	gotManaged := map[string]string{}
	for p, f := range n.ManagedFiles {
		gotManaged[p] = f.Content
	}
	if diff := cmp.Diff(wantManaged, gotManaged); diff != "" {
		t.Errorf("managed files (-want +got):\n%s", diff)
	}
	wantUnits := map[string]facts.UnitState{
		"toy.service":    {Enabled: "enabled", Active: "inactive"},
		"absent.service": {Enabled: "not-found", Active: "inactive"},
	}
	if diff := cmp.Diff(wantUnits, n.Units); diff != "" {
		t.Errorf("units (-want +got):\n%s", diff)
	}
	wantAvailable := map[string][]string{"toy-driver-580": {"580.1-1"}, "toy-tools": {"2.0"}}
	if diff := cmp.Diff(wantAvailable, n.Packages.Available); diff != "" {
		t.Errorf("repository candidates (-want +got):\n%s", diff)
	}
}

// TestProbeRefusesBadDeclarations: a declaration the probe could not carry
// as a plain word, or one without the files the parser requires, is
// refused before anything runs on the node.
func TestProbeRefusesBadDeclarations(t *testing.T) {
	base := facts.Reads{ConfigFiles: []string{"/etc/docker/daemon.json"}}
	tests := map[string]facts.Reads{
		"no declarations":  {},
		"relative":         base.Union(facts.Reads{ConfigFiles: []string{"etc/x"}}),
		"space":            base.Union(facts.Reads{ManagedFiles: []string{"/etc/a b"}}),
		"shell":            base.Union(facts.Reads{ManagedDirs: []string{"/etc/$(reboot)"}}),
		"dot-dot":          base.Union(facts.Reads{ConfigFiles: []string{"/etc/../root/x"}}),
		"glob":             base.Union(facts.Reads{ConfigFiles: []string{"/etc/*.conf"}}),
		"unit":             base.Union(facts.Reads{Units: []string{"docker; reboot"}}),
		"unit without dot": base.Union(facts.Reads{Units: []string{"docker"}}),
		"package":          base.Union(facts.Reads{RepoPackages: []string{"a|b"}}),
		"package pattern":  base.Union(facts.Reads{RepoPackages: []string{"cuda-.*"}}),
	}
	for name, r := range tests {
		t.Run(name, func(t *testing.T) {
			tr := &fakeTransport{}
			if _, err := facts.Probe(context.Background(), tr, facts.Options{Reads: r}); err == nil {
				t.Errorf("Probe accepted %+v", r)
			}
			if len(tr.seen) != 0 {
				t.Errorf("Probe ran the script for refused declarations %+v", r)
			}
		})
	}
}

// TestProbeAsksRuntimeClients: where a runtime's socket exists and its
// client is inside the root, the probe lists the runtime's images (a
// renamed probe function once left "c docker-images" calling nothing, and
// only a pull in cmd/gpuform's tests noticed).
func TestProbeAsksRuntimeClients(t *testing.T) {
	root := t.TempDir()
	write := func(p, content string, mode os.FileMode) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/os-release", "ID=debian\n", 0o644)
	write("run/docker.sock", "", 0o644)
	write("run/containerd/containerd.sock", "", 0o644)
	write("bin/docker", "#!/bin/sh\necho 'sha256:aa nvcr.io/nvidia/pytorch 25.01 sha256:bb'\n", 0o755)
	write("bin/ctr", "#!/bin/sh\necho 'REF TYPE DIGEST SIZE PLATFORMS LABELS'\n", 0o755)
	// A clean environment: only the root's bin and the system's on PATH.
	n, _ := runProbeFileIn(t, writeProbeFile(t, nil), []string{"sh"},
		[]string{"GPUFORM_ROOT=" + root, "GPUFORM_PROBE_NONCE=i1", "PATH=" + filepath.Join(root, "bin") + ":/usr/bin:/bin"})
	for _, rt := range []string{facts.RuntimeDocker, facts.RuntimeContainerd} {
		if s := n.Images[rt]; s == nil || s.Error != "" {
			t.Errorf("%s image store %+v: want one listed without error", rt, s)
		}
	}
	if s := n.Images[facts.RuntimeDocker]; s != nil && len(s.Images) != 1 {
		t.Errorf("docker images %+v, want the one the client lists", s.Images)
	}
}
