package main

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/debroot"
)

// enrootDebs are enroot and enroot+caps at one release, with the
// dependency of NVIDIA/enroot's pkg/deb/control (enroot+caps on enroot at
// exactly its version), as a site mirror of NVIDIA's release files serves
// them.
func enrootDebs(version string) []debroot.Deb {
	return []debroot.Deb{
		{Name: "enroot", Version: version},
		{Name: "enroot+caps", Version: version, Depends: "enroot (= " + version + ")"},
	}
}

// pyxisDeb is nvslurm-plugin-pyxis with the dependency and plugin path of
// NVIDIA/pyxis's debian/control and debian/rules.
func pyxisDeb(version string) debroot.Deb {
	return debroot.Deb{Name: "nvslurm-plugin-pyxis", Version: version,
		Depends: "enroot (>= 3.1.0) | enroot-hardened (>= 3.1.0)",
		Files:   map[string]string{"/usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so": "\x7fELF"}}
}

// TestAptRuntimePackages installs enroot, enroot+caps and pyxis with the
// real apt and dpkg: pinned, held, pyxis after enroot and loaded by the
// plugstack line; a new enroot release moves both enroot packages under
// their holds; a release the mirror lacks fails saying where NVIDIA
// publishes it, and every hold stays.
func TestAptRuntimePackages(t *testing.T) {
	t.Parallel()
	debs := append(append(enrootDebs("4.1.1-1"), enrootDebs("4.1.2-1")...), pyxisDeb("0.24.0-1"))
	a := startAptNode(t, debs)
	body := func(enroot string) string {
		return "  container {\n    runtime = \"enroot\"\n    enroot_version = \"" + enroot + "\"\n    enroot_caps = true\n    pyxis_version = \"0.24.0\"\n  }"
	}
	installed := func() string {
		out, _ := a.root.Exec(`dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\n' enroot enroot+caps nvslurm-plugin-pyxis 2>/dev/null | sort`)
		return strings.Join(strings.Fields(out), " ")
	}
	a.spec(body("4.1.1"))
	a.apply()
	if got, want := installed(), "hi enroot 4.1.1-1 hi enroot+caps 4.1.1-1 hi nvslurm-plugin-pyxis 0.24.0-1"; got != want {
		t.Errorf("installed: %s\nwant: %s", got, want)
	}
	if out := a.root.Run(t, "cat /etc/slurm/plugstack.conf.d/pyxis.conf"); !strings.HasSuffix(out, "\nrequired /usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so\n") {
		t.Errorf("pyxis.conf:\n%s", out)
	}
	if code, out, errOut := a.cli("", "plan", "-detailed-exitcode"); code != ExitOK {
		t.Errorf("second plan: exit %d\n%s\n%s", code, out, errOut)
	}

	a.spec(body("4.1.2"))
	a.apply()
	if got, want := installed(), "hi enroot 4.1.2-1 hi enroot+caps 4.1.2-1 hi nvslurm-plugin-pyxis 0.24.0-1"; got != want {
		t.Errorf("installed after the upgrade: %s\nwant: %s", got, want)
	}

	a.spec(body("4.0.1"))
	code, out, errOut := a.cli("", "apply", "-auto-approve")
	want := "put https://github.com/NVIDIA/enroot/releases/download/v4.0.1/enroot_4.0.1-1_amd64.deb and https://github.com/NVIDIA/enroot/releases/download/v4.0.1/enroot+caps_4.0.1-1_amd64.deb in a repository this node uses"
	if code != ExitFailed || !strings.Contains(strings.Join(strings.Fields(out+errOut), " "), want) {
		t.Errorf("apply of a release the mirror lacks: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	if h := a.holds(); strings.Join(h, " ") != "enroot enroot+caps nvslurm-plugin-pyxis" {
		t.Errorf("holds after the failed install: %v", h)
	}
}

// TestDnfRuntimePackages is the same with the real dnf: the packages of
// NVIDIA's el8 release files and a site-built pyxis rpm (Release
// 1.sl<slurm>%{dist}, pyxis.spec) are installed and version-locked, the
// plugstack line names the rpm's %{_libdir}, and a release the mirror
// lacks fails naming NVIDIA's rpm, with the locks put back.
func TestDnfRuntimePackages(t *testing.T) {
	t.Parallel()
	a := startRPMNode(t)
	a.root.PublishRPMs(t,
		debroot.RPM{Name: "enroot", Version: "4.1.2", Release: "1.el8"},
		debroot.RPM{Name: "enroot+caps", Version: "4.1.2", Release: "1.el8", Requires: []string{"enroot = 4.1.2-1.el8"}},
		debroot.RPM{Name: "nvslurm-plugin-pyxis", Version: "0.24.0", Release: "1.sl2411.el9", Requires: []string{"(enroot >= 3.1.0 or enroot-hardened >= 3.1.0)"},
			Files: map[string]string{"/usr/lib64/slurm/spank_pyxis.so": "\x7fELF"}})
	body := func(enroot string) string {
		return "  container {\n    runtime = \"enroot\"\n    enroot_version = \"" + enroot + "\"\n    enroot_caps = true\n    pyxis_version = \"0.24.0\"\n  }"
	}
	a.spec(body("4.1.2"))
	a.apply()
	if out := a.root.Run(t, `rpm -q --qf '%{NAME} %{VERSION}-%{RELEASE}\n' enroot enroot+caps nvslurm-plugin-pyxis`); out != "enroot 4.1.2-1.el8\nenroot+caps 4.1.2-1.el8\nnvslurm-plugin-pyxis 0.24.0-1.sl2411.el9\n" {
		t.Errorf("rpm -q:\n%s", out)
	}
	locks := a.root.Run(t, "cat /etc/dnf/plugins/versionlock.list")
	for _, l := range []string{"enroot-0:4.1.2-1.el8.*", "enroot+caps-0:4.1.2-1.el8.*", "nvslurm-plugin-pyxis-0:0.24.0-1.sl2411.el9.*"} {
		if !strings.Contains(locks, l) {
			t.Errorf("versionlock.list lacks %s:\n%s", l, locks)
		}
	}
	if out := a.root.Run(t, "cat /etc/slurm/plugstack.conf.d/pyxis.conf"); !strings.HasSuffix(out, "\nrequired /usr/lib64/slurm/spank_pyxis.so\n") {
		t.Errorf("pyxis.conf:\n%s", out)
	}
	if code, out, errOut := a.cli("", "plan", "-detailed-exitcode"); code != ExitOK {
		t.Errorf("second plan: exit %d\n%s\n%s", code, out, errOut)
	}
	a.spec(body("4.0.1"))
	code, out, errOut := a.cli("", "apply", "-auto-approve")
	if code != ExitFailed || !strings.Contains(strings.Join(strings.Fields(out+errOut), " "), "put https://github.com/NVIDIA/enroot/releases/download/v4.0.1/enroot-4.0.1-1.el8.x86_64.rpm and") {
		t.Errorf("apply of a release the mirror lacks: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	if after := a.root.Run(t, "cat /etc/dnf/plugins/versionlock.list"); !strings.Contains(after, "enroot-0:4.1.2-1.el8.*") {
		t.Errorf("enroot's version lock was not put back:\n%s", after)
	}
}
