package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/debroot"
)

// aptNode is a Debian 12 root with the real apt and dpkg behind sshd, and
// the CLI pointed at it.
type aptNode struct {
	t    *testing.T
	root *debroot.Root
	dir  string
}

func startAptNode(t *testing.T, debs []debroot.Deb) *aptNode {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a Debian root and runs the real apt")
	}
	if debs == nil {
		debs = debroot.NVIDIARepo()
	}
	r := debroot.Start(t, debroot.Options{Packages: debs})
	return &aptNode{t: t, root: r, dir: t.TempDir()}
}

// spec writes the node's spec: body goes inside the node block.
func (a *aptNode) spec(body string) {
	a.t.Helper()
	src := "node \"n\" {\n  hosts = [\"" + a.root.Alias + "\"]\n" + body + "\n}\n"
	if err := os.WriteFile(filepath.Join(a.dir, "main.gpuform.hcl"), []byte(src), 0o644); err != nil {
		a.t.Fatal(err)
	}
}

// cli runs gpuform with the root's ssh settings.
func (a *aptNode) cli(stdin string, args ...string) (int, string, string) {
	a.t.Helper()
	full := append([]string{args[0], "-ssh-config", a.root.SSHConfig, "-known-hosts", a.root.KnownHosts, "-identity", a.root.Identity}, args[1:]...)
	full = append(full, a.dir)
	return runCLI(a.t, stdin, full...)
}

// apply runs apply -auto-approve and fails the test unless it succeeds.
func (a *aptNode) apply() string {
	a.t.Helper()
	code, out, errOut := a.cli("", "apply", "-auto-approve")
	if code != ExitOK {
		a.t.Fatalf("apply: exit %d\n%s\n%s\ndpkg:\n%s", code, out, errOut, a.dpkg())
	}
	return out
}

// dpkg is `dpkg -l` of the NVIDIA test packages: "name version status".
func (a *aptNode) dpkg() string {
	a.t.Helper()
	out, _ := a.root.Exec(`dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\n' | grep -v '^un ' | awk '$2 ~ /nvidia|cuda|nccl/ {print $2, $3, $1}' | sort`)
	return out
}

// holds is `apt-mark showhold`, sorted.
func (a *aptNode) holds() []string {
	a.t.Helper()
	out := a.root.Run(a.t, "apt-mark showhold")
	h := strings.Fields(out)
	sort.Strings(h)
	return h
}

// converged checks what every scenario ends with: dpkg -l shows exactly
// want (name version, fully installed), apt-mark showhold shows held,
// dpkg --audit is silent, and a second plan has no changes.
func (a *aptNode) converged(want []string, held []string) {
	a.t.Helper()
	got := a.dpkg()
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		if f[2] != "ii" && f[2] != "hi" {
			a.t.Errorf("%s %s is in dpkg state %s, want installed", f[0], f[1], f[2])
		}
		lines = append(lines, f[0]+" "+f[1])
	}
	sort.Strings(want)
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		a.t.Errorf("dpkg -l:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	sort.Strings(held)
	if h := a.holds(); strings.Join(h, " ") != strings.Join(held, " ") {
		a.t.Errorf("apt-mark showhold = %v, want %v", h, held)
	}
	if out := a.root.Run(a.t, "dpkg --audit || true"); strings.TrimSpace(out) != "" {
		a.t.Errorf("dpkg --audit:\n%s", out)
	}
	code, out, errOut := a.cli("", "plan", "-detailed-exitcode")
	if code != ExitOK || !strings.Contains(out, "No changes.") {
		a.t.Errorf("second plan: exit %d\n%s\n%s", code, out, errOut)
	}
}

// TestAptInterruptedDpkgIsRepaired: NCCL's install is killed while its
// postinst runs, leaving libnccl2 half-configured (iF) and libnccl-dev
// unpacked (iU). Plan names the interrupted dpkg as its own change instead
// of "nccl will be created"; apply runs dpkg --configure -a first and
// converges.
func TestAptInterruptedDpkgIsRepaired(t *testing.T) {
	debs := debroot.NVIDIARepo()
	for i, d := range debs {
		if d.Name == "libnccl2" && d.Version == "2.21.5-1+cuda12.4" {
			// A postinst that waits while the test wants it to.
			debs[i].Postinst = "#!/bin/sh\nif [ -e /run/slow-postinst ]; then : >/run/in-postinst; sleep 600; fi\nexit 0\n"
		}
	}
	a := startAptNode(t, debs)
	a.spec(`  nccl { version = "2.21.5" }`)
	a.root.Run(t, ": >/run/slow-postinst")
	cmd, err := a.root.Command(t.Context(), "apt-get install -y -q libnccl2=2.21.5-1+cuda12.4 libnccl-dev=2.21.5-1+cuda12.4 >/run/apt.log 2>&1")
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a.root.Run(t, "i=0; while [ ! -e /run/in-postinst ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; [ -e /run/in-postinst ]")
	// Kill apt, dpkg and the postinst as a power cut or a kill -9 would.
	a.root.Run(t, "pkill -KILL -x apt-get; pkill -KILL -x dpkg; pkill -KILL libnccl2.postin; pkill -KILL -x sleep; rm -f /run/slow-postinst; true")
	_ = cmd.Wait()
	if st := a.dpkg(); !strings.Contains(st, "libnccl2 2.21.5-1+cuda12.4 iF") {
		t.Fatalf("the killed install did not leave libnccl2 half-configured:\n%s", st)
	}
	code, out, errOut := a.cli("", "plan", "-detailed-exitcode")
	if code != ExitReport || !strings.Contains(out, "dpkg_interrupted") || !strings.Contains(out, "libnccl2 (half-configured)") {
		t.Fatalf("plan: exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out, "nccl will be created") {
		t.Errorf("plan shows a half-configured NCCL as absent:\n%s", out)
	}
	a.apply()
	a.converged([]string{"libnccl2 2.21.5-1+cuda12.4", "libnccl-dev 2.21.5-1+cuda12.4"}, []string{"libnccl-dev", "libnccl2"})
}
