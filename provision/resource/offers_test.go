package resource

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
)

// TestResolveOffered resolves floating versions against what a host's
// repositories offer (versions as NVIDIA's repositories and the
// knowledge base's packages.tsv write them), as apt would pick them: the
// newest matching release, every package of the set pinned exactly, and
// a release none offers reported as missing.
func TestResolveOffered(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		res        string
		offered    map[string][]string
		installed  map[string]string
		version    string            // after["version"]
		from       string            // VersionFrom
		releases   map[string]string // Releases
		missing    string            // "package release" of the first Missing
	}{
		{name: "driver branch", res: DriverPackage, body: "driver {\n version = \"580\"\n kernel_module = \"open\"\n}",
			offered: map[string][]string{"nvidia-open": {"590.44.01-1", "580.95.05-1", "580.65.06-1"}},
			version: "580.95.05", from: "580", releases: map[string]string{"nvidia-open": "580.95.05-1"}},
		{name: "nccl series", res: NCCL, body: "cuda { version = \"12.4.1\" }\nnccl { version = \"2.21\" }",
			offered: map[string][]string{"libnccl2": {"2.21.5-1+cuda12.4", "2.21.5-1+cuda12.8", "2.20.5-1+cuda12.4"}, "libnccl-dev": {"2.21.5-1+cuda12.4", "2.20.5-1+cuda12.4"}, "cuda-toolkit-12-4": {"12.4.1-1"}},
			version: "2.21.5", from: "2.21", releases: map[string]string{"libnccl2": "2.21.5-1+cuda12.4", "libnccl-dev": "2.21.5-1+cuda12.4"}},
		{name: "enroot series keeps what is installed", res: EnrootPackage, body: "container {\n runtime = \"enroot\"\n enroot_version = \"4.1\"\n enroot_caps = true\n}",
			offered:   map[string][]string{"enroot": {"4.1.2-1", "4.1.1-1"}, "enroot+caps": {"4.1.2-1", "4.1.1-1"}},
			installed: map[string]string{"enroot": "4.1.1-1"},
			version:   "4.1.1", releases: map[string]string{"enroot": "4.1.1-1", "enroot+caps": "4.1.1-1"}},
		{name: "exact release missing", res: EnrootPackage, body: "container {\n runtime = \"enroot\"\n enroot_version = \"4.1.2\"\n}",
			offered: map[string][]string{"enroot": {"4.1.1-1"}},
			version: "4.1.2", missing: "enroot 4.1.2-1"},
		{name: "dcgm epoch", res: DCGM, body: "dcgm { version = \"4.6\" }",
			offered: map[string][]string{"datacenter-gpu-manager-4-core": {"1:4.6.0-1", "1:4.5.2-1", "1:3.3.9-1"}},
			version: "4.6.0", from: "4.6", releases: map[string]string{"datacenter-gpu-manager-4-core": "1:4.6.0-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := loadNode(t, tc.body)
			f := debianNode()
			for name, v := range tc.installed {
				f.Packages.Installed[name] = facts.Package{Version: v}
			}
			f.Offers = &facts.Offers{Manager: "apt", Versions: tc.offered, Lists: 1}
			got, _ := diffAll(t, n, f)
			c := got[tc.res]
			if c.After["version"] != StringVal(tc.version) || c.VersionFrom != tc.from {
				t.Errorf("version %q (from %q), want %q (from %q)", c.After["version"].Text, c.VersionFrom, tc.version, tc.from)
			}
			if tc.missing != "" {
				if len(c.Missing) == 0 || c.Missing[0].Package+" "+c.Missing[0].Release != tc.missing {
					t.Errorf("missing %+v, want %s", c.Missing, tc.missing)
				}
				return
			}
			if len(c.Missing) != 0 {
				t.Errorf("missing %+v", c.Missing)
			}
			for name, v := range tc.releases {
				if c.Releases[name] != v {
					t.Errorf("releases %v, want %s=%s", c.Releases, name, v)
				}
			}
			install := ""
			for _, st := range c.Steps {
				if strings.HasPrefix(st.Description, "install ") {
					install = st.Description
				}
			}
			for name, v := range tc.releases {
				if !strings.Contains(install, name+"="+v) {
					t.Errorf("install step %q does not pin %s=%s", install, name, v)
				}
			}
		})
	}
}

// TestResolveOfferedWithoutLists: a host whose package manager holds no
// metadata leaves a floating version unresolved, said so, and reports
// nothing missing (apply refreshes the lists).
func TestResolveOfferedWithoutLists(t *testing.T) {
	n := loadNode(t, "driver {\n version = \"580\"\n kernel_module = \"open\"\n}")
	f := debianNode()
	f.Offers = &facts.Offers{Manager: "apt", Versions: map[string][]string{}}
	got, _ := diffAll(t, n, f)
	c := got[DriverPackage]
	if c.After["version"] != StringVal("580") || !strings.Contains(c.Unresolved, "apt-get update never ran") || len(c.Missing) != 0 || len(c.Releases) != 0 {
		t.Errorf("change %+v", c)
	}
}
