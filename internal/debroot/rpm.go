package debroot

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// RPM is a package the test builds with rpmbuild (inside the RPM-flavoured
// root) and publishes in its dnf repository with createrepo_c.
type RPM struct {
	Name, Version, Release string
	// Requires, Provides, Conflicts and Obsoletes are spec-file values
	// ("nvidia-kernel-open-580 = 580.95.05-1").
	Requires, Provides, Conflicts, Obsoletes []string
	// Files maps absolute paths to contents; every package also gets
	// /usr/share/gpuform-test/<name> holding its version.
	Files map[string]string
}

func (p RPM) spec() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Name: %s\nVersion: %s\nRelease: %s\nSummary: %s test package\nLicense: none\nBuildArch: noarch\n", p.Name, p.Version, p.Release, p.Name)
	for _, f := range []struct {
		k  string
		vs []string
	}{{"Requires", p.Requires}, {"Provides", p.Provides}, {"Conflicts", p.Conflicts}, {"Obsoletes", p.Obsoletes}} {
		for _, v := range f.vs {
			fmt.Fprintf(&b, "%s: %s\n", f.k, v)
		}
	}
	fmt.Fprintf(&b, "\n%%description\nBuilt by gpuform's tests with NVIDIA's name, version and dependencies.\n\n%%install\nmkdir -p %%{buildroot}/usr/share/gpuform-test\necho %s-%s > %%{buildroot}/usr/share/gpuform-test/%s\n", p.Version, p.Release, p.Name)
	files := []string{"/usr/share/gpuform-test/" + p.Name}
	for path, content := range p.Files {
		fmt.Fprintf(&b, "mkdir -p %%{buildroot}%s\ncat > %%{buildroot}%s <<'GPUFORM_EOF'\n%sGPUFORM_EOF\n", filepath.Dir(path), path, content)
		files = append(files, path)
	}
	fmt.Fprintf(&b, "\n%%files\n%s\n", strings.Join(files, "\n"))
	return b.String()
}

// PublishRPMs builds RPMs inside the root and rebuilds the repository's
// metadata.
func (r *Root) PublishRPMs(t testing.TB, rpms ...RPM) {
	t.Helper()
	var script strings.Builder
	script.WriteString("set -e\ntop=$(mktemp -d)\nmkdir -p " + repoMount + "/specs\n")
	for _, p := range rpms {
		spec := fmt.Sprintf("%s-%s-%s.spec", p.Name, p.Version, p.Release)
		writeFile(t, filepath.Join(r.RepoDir, "specs", spec), []byte(p.spec()), 0o644)
		fmt.Fprintf(&script, "rpmbuild --quiet --define \"_topdir $top\" -bb %s/specs/%s >/dev/null\n", repoMount, spec)
	}
	script.WriteString("find \"$top/RPMS\" -name '*.rpm' -exec cp {} " + repoMount + "/ \\; 2>/dev/null || true\nrm -rf \"$top\"\ncreaterepo_c --quiet " + repoMount + " >/dev/null\n")
	if out, err := r.Exec(script.String()); err != nil {
		t.Fatalf("debroot: building RPMs: %v\n%s", err, out)
	}
}

// NVIDIARPMs are NVIDIA's RHEL package names at the releases of
// NVIDIARepo: nvidia-open (open modules) requiring its kernel module
// package with "=", nvidia-fabricmanager-<branch> that provides and
// conflicts with nvidia-fabricmanager, and libnccl/libnccl-devel.
func NVIDIARPMs() []RPM {
	var out []RPM
	for _, rel := range OpenReleases {
		b := branch(rel)
		out = append(out,
			RPM{Name: "nvidia-kernel-open-" + b, Version: rel, Release: "1", Provides: []string{"nvidia-kernel"}, Conflicts: []string{"nvidia-kernel"}},
			RPM{Name: "nvidia-open", Version: rel, Release: "1", Requires: []string{"nvidia-kernel-open-" + b + " = " + rel + "-1"}},
			RPM{Name: "nvidia-fabricmanager-" + b, Version: rel, Release: "1", Provides: []string{"nvidia-fabricmanager"}, Conflicts: []string{"nvidia-fabricmanager"},
				Files: map[string]string{"/usr/lib/systemd/system/nvidia-fabricmanager.service": unit("NVIDIA fabric manager service", "/usr/bin/nv-fabricmanager")}},
		)
	}
	for _, v := range NCCLReleases {
		ver, rel, _ := strings.Cut(v, "-")
		out = append(out,
			RPM{Name: "libnccl", Version: ver, Release: rel},
			RPM{Name: "libnccl-devel", Version: ver, Release: rel, Requires: []string{"libnccl = " + ver + "-" + rel}},
		)
	}
	return out
}
