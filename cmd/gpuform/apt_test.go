package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/gpuform/gpuform/internal/debroot"
)

// aptNode is a Debian 12 root with the real apt and dpkg behind sshd, and
// the CLI pointed at it.
type aptNode struct {
	t    *testing.T
	root *debroot.Root
	dir  string
	// driver: the spec written last declares a driver. The root runs no
	// kernel, so the driver apply installs is never loaded.
	driver bool
}

func startAptNode(t *testing.T, debs []debroot.Deb) *aptNode {
	t.Helper()
	if debs == nil {
		debs = debroot.NVIDIARepo()
	}
	return startRootNode(t, debroot.Options{Packages: debs})
}

// startRootNode starts a debroot root (Debian with apt, or Rocky-like with
// dnf) as a node the CLI reaches over SSH. These tests build a root and
// run the real package manager, so go test -short (a quick local loop)
// leaves them out; the suite and CI run them all.
func startRootNode(t *testing.T, opts debroot.Options) *aptNode {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: builds a root and runs the real apt or dnf")
	}
	r := debroot.Start(t, opts)
	return &aptNode{t: t, root: r, dir: t.TempDir()}
}

// driverBlock finds a driver block in a node block's body.
var driverBlock = regexp.MustCompile(`(?m)^\s*driver\s*\{`)

// spec writes the node's spec: body goes inside the node block.
func (a *aptNode) spec(body string) {
	a.t.Helper()
	src := "node \"n\" {\n  hosts = [\"" + a.root.Alias + "\"]\n" + body + "\n}\n"
	a.driver = driverBlock.MatchString(body)
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
	a.planConverged()
}

// planConverged checks the second plan after apply: no changes, and exit 0
// unless the spec declares a driver. The root runs no kernel, so the
// installed driver is never loaded: the plan says "none loaded; reboot
// pending" and -detailed-exitcode exits 2 (README: a host that waits for a
// reboot to run what is installed has something to report).
func (a *aptNode) planConverged() {
	a.t.Helper()
	code, out, errOut := a.cli("", "plan", "-detailed-exitcode")
	wantCode, wantSummary := ExitOK, "No changes.\n"
	if a.driver {
		wantCode, wantSummary = ExitReport, "No changes. Reboot pending.\n"
	}
	if code != wantCode || !strings.Contains(out, wantSummary) || strings.Contains(out, "none loaded; reboot pending") != a.driver {
		a.t.Errorf("second plan (spec declares a driver: %v): exit %d, want %d and %q\n%s\n%s", a.driver, code, wantCode, wantSummary, out, errOut)
	}
}

// TestAptInterruptedDpkgIsRepaired: NCCL's install is killed while its
// postinst runs, leaving libnccl2 half-configured (iF) and libnccl-dev
// unpacked (iU). Plan names the interrupted dpkg as its own change instead
// of "nccl will be created"; apply runs dpkg --configure -a first and
// converges.
func TestAptInterruptedDpkgIsRepaired(t *testing.T) {
	t.Parallel()
	// A postinst that waits while the test wants it to.
	debs := ncclWithPostinst("#!/bin/sh\nif [ -e /run/slow-postinst ]; then : >/run/in-postinst; sleep 600; fi\nexit 0\n")
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

// stack is the spec body of a full package stack on driver release drv in
// flavour ("open" or "proprietary").
func stack(drv, flavour, nccl, toolkit string) string {
	return `  driver {
    version        = "` + drv + `"
    kernel_module  = "` + flavour + `"
    fabric_manager = true
  }
  cuda { version = "12.4.1" }
  nccl { version = "` + nccl + `" }
  container {
    runtime                  = "docker"
    nvidia_container_toolkit = "` + toolkit + `"
  }`
}

// stackPackages is what dpkg -l shows for stack, and the packages held.
func stackPackages(drv string, open bool, nccl, toolkit string) (installed, held []string) {
	b := strings.SplitN(drv, ".", 2)[0]
	meta, kernel := "cuda-drivers-"+b, "nvidia-kernel-source-"+b
	if open {
		meta, kernel = "nvidia-open", "nvidia-kernel-open-"+b
	}
	n := nccl + "-1+cuda12.4"
	tk := toolkit + "-1"
	installed = []string{meta + " " + drv + "-1", kernel + " " + drv + "-1", "nvidia-fabricmanager-" + b + " " + drv + "-1",
		"cuda-toolkit-12-4 12.4.1-1", "libnccl2 " + n, "libnccl-dev " + n,
		"nvidia-container-toolkit " + tk, "nvidia-container-toolkit-base " + tk, "libnvidia-container-tools " + tk, "libnvidia-container1 " + tk}
	if open {
		// NVIDIA's branch pinning package joins the open driver's
		// transaction (debroot.PinningDeb carries 580.95.05-1).
		installed = append(installed, "nvidia-driver-pinning-"+b+" 580.95.05-1")
	}
	for _, l := range installed {
		held = append(held, strings.Fields(l)[0])
	}
	return installed, held
}

// TestAptFreshInstallAndBranchChange installs the whole stack on an empty
// Debian 12 node, then moves the driver from 550 proprietary to 580 open:
// the plan shows the old branch's packages leaving ("-"), one apt
// transaction removes the held cuda-drivers-550, its kernel module package
// and fabric manager 550, and every hold moves to the new packages.
func TestAptFreshInstallAndBranchChange(t *testing.T) {
	t.Parallel()
	a := startAptNode(t, nil)
	a.spec(stack("550.127.08", "proprietary", "2.21.5", "1.17.8"))
	a.apply()
	installed, held := stackPackages("550.127.08", false, "2.21.5", "1.17.8")
	a.converged(installed, held)

	a.spec(stack("580.95.05", "open", "2.21.5", "1.17.8"))
	code, out, errOut := a.cli("", "plan", "-detailed-exitcode")
	for _, want := range []string{`- package cuda-drivers-550`, `- package nvidia-kernel-source-550`, `- package nvidia-fabricmanager-550`} {
		if code != ExitReport || !strings.Contains(out, want) {
			t.Errorf("plan does not show %q (exit %d):\n%s\n%s", want, code, out, errOut)
		}
	}
	a.apply()
	installed, held = stackPackages("580.95.05", true, "2.21.5", "1.17.8")
	a.converged(installed, held)
}

// TestAptUpgradeAndDowngrade moves the open driver within its branch up
// (580.65.06 → 580.95.05) and back down, with NCCL and the container
// toolkit down and up: the plan marks each downgrade in text and JSON, and
// apt gets the kernel module package's exact version with the meta
// package's (without it: "nvidia-open : Depends: nvidia-kernel-open-580
// (= 580.65.06-1) but 580.95.05-1 is to be installed").
func TestAptUpgradeAndDowngrade(t *testing.T) {
	t.Parallel()
	a := startAptNode(t, nil)
	a.spec(stack("580.65.06", "open", "2.21.5", "1.17.8"))
	a.apply()
	a.spec(stack("580.95.05", "open", "2.21.5", "1.18.0"))
	if code, out, _ := a.cli("", "plan", "-detailed-exitcode"); code != ExitReport || strings.Contains(out, "downgrades") {
		t.Errorf("an upgrade plan: exit %d\n%s", code, out)
	}
	a.apply()
	installed, held := stackPackages("580.95.05", true, "2.21.5", "1.18.0")
	a.converged(installed, held)

	a.spec(stack("580.65.06", "open", "2.20.5", "1.17.8"))
	code, out, errOut := a.cli("", "plan", "-detailed-exitcode")
	for _, want := range []string{"downgrades nvidia-open 580.95.05 -> 580.65.06", "downgrades libnccl2 2.21.5 -> 2.20.5", "downgrades nvidia-container-toolkit 1.18.0 -> 1.17.8"} {
		if code != ExitReport || !strings.Contains(out, want) {
			t.Errorf("plan does not say %q (exit %d):\n%s\n%s", want, code, out, errOut)
		}
	}
	_, js, _ := a.cli("", "plan", "-json")
	var doc struct {
		Hosts []struct {
			ResourceChanges []struct {
				Resource   string   `json:"resource"`
				Downgrades []string `json:"downgrades"`
			} `json:"resource_changes"`
		} `json:"hosts"`
	}
	downgrades := map[string][]string{}
	if err := json.Unmarshal([]byte(js), &doc); err == nil && len(doc.Hosts) == 1 {
		for _, rc := range doc.Hosts[0].ResourceChanges {
			downgrades[rc.Resource] = rc.Downgrades
		}
	}
	if got := strings.Join(downgrades["driver_package"], ";"); got != "nvidia-open 580.95.05 -> 580.65.06" {
		t.Errorf("plan -json: driver_package downgrades %q\n%s", got, js)
	}
	a.apply()
	installed, held = stackPackages("580.65.06", true, "2.20.5", "1.17.8")
	a.converged(installed, held)
}

// TestAptMissingReleaseKeepsHoldsAndRefreshes asks for a driver release the
// repository does not carry yet: plan fails the host naming the package,
// the release and apt, and apply runs no step (the installed driver and
// every hold stay). Once the release is published and the node's lists
// refreshed, apply installs exactly it.
func TestAptMissingReleaseKeepsHoldsAndRefreshes(t *testing.T) {
	t.Parallel()
	a := startAptNode(t, nil)
	a.spec(`  driver {
    version        = "580.65.06"
    kernel_module  = "open"
    fabric_manager = true
  }`)
	a.apply()
	want := []string{"nvidia-open 580.65.06-1", "nvidia-kernel-open-580 580.65.06-1", "nvidia-fabricmanager-580 580.65.06-1", "nvidia-driver-pinning-580 580.95.05-1"}
	wantHeld := []string{"nvidia-open", "nvidia-kernel-open-580", "nvidia-fabricmanager-580", "nvidia-driver-pinning-580"}
	a.converged(want, wantHeld)

	// 580.82.07 is a real 580 release (cuda-driver.tsv) the test
	// repository does not publish yet.
	a.spec(`  driver {
    version        = "580.82.07"
    kernel_module  = "open"
    fabric_manager = true
  }`)
	code, out, errOut := a.cli("", "plan")
	text := strings.Join(strings.Fields(out), " ")
	for _, w := range []string{
		"package release: expected nvidia-open 580.82.07-* (driver_package) from a repository of the host; found no repository apt uses on this host offers it: apt offers nvidia-open 590.44.01-1, 580.95.05-1, 580.65.06-1",
		"package release: expected nvidia-fabricmanager-580 580.82.07-1 (fabric_manager)",
		"run apt-get update on the host and plan again",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("plan lacks %q:\n%s", w, out)
		}
	}
	if code != ExitFailed {
		t.Errorf("plan of a missing release: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	before := a.root.Run(t, "cat /var/log/apt/history.log 2>/dev/null | grep -c '^Start-Date' || true")
	code, out, errOut = a.cli("", "apply", "-auto-approve")
	if code != ExitFailed || !strings.Contains(strings.Join(strings.Fields(out+errOut), " "), "nvidia-open 580.82.07-* (driver_package)") || !strings.Contains(errOut+out, "nothing was changed") {
		t.Fatalf("apply of a missing release: exit %d\n%s\n%s", code, out, errOut)
	}
	if after := a.root.Run(t, "cat /var/log/apt/history.log 2>/dev/null | grep -c '^Start-Date' || true"); after != before {
		t.Errorf("apt ran although plan refused the host (history.log entries %s -> %s)", strings.TrimSpace(before), strings.TrimSpace(after))
	}
	var installed []string
	for _, l := range strings.Split(strings.TrimSpace(a.dpkg()), "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			installed = append(installed, f[0]+" "+f[1])
		}
	}
	sort.Strings(installed)
	sort.Strings(want)
	if strings.Join(installed, ", ") != strings.Join(want, ", ") {
		t.Errorf("after the refused apply dpkg has %v, want %v", installed, want)
	}
	sort.Strings(wantHeld)
	if h := a.holds(); strings.Join(h, " ") != strings.Join(wantHeld, " ") {
		t.Errorf("holds after the refused apply: %v", h)
	}

	a.root.Publish(t, debroot.DriverDebs("580.82.07", true)...)
	a.root.Publish(t, debroot.FabricManagerDeb("580.82.07"))
	a.root.Run(t, "apt-get update -q >/dev/null")
	a.apply()
	a.converged([]string{"nvidia-open 580.82.07-1", "nvidia-kernel-open-580 580.82.07-1", "nvidia-fabricmanager-580 580.82.07-1", "nvidia-driver-pinning-580 580.95.05-1"}, wantHeld)
}

// TestAptPlanShowsAndPinsTheRelease (issue 30, item 3) with the real apt: a
// floating "580" plans as the newest release of the branch the node's lists
// offer, shown with where it came from; the saved plan records the exact
// versions, and apply of it installs them although a newer 580 release was
// published (and the lists refreshed) in between.
func TestAptPlanShowsAndPinsTheRelease(t *testing.T) {
	t.Parallel()
	a := startAptNode(t, nil)
	a.spec(`  driver {
    version        = "580"
    kernel_module  = "open"
    fabric_manager = true
  }`)
	saved := filepath.Join(t.TempDir(), "plan.json")
	code, out, errOut := a.cli("", "plan", "-out", saved)
	// debroot.NVIDIARepo publishes nvidia-open 580.65.06-1, 580.95.05-1 and
	// 590.44.01-1.
	if code != ExitOK || !regexp.MustCompile(`\+ version += "580.95.05" \(from "580"\)`).MatchString(out) {
		t.Fatalf("plan -out: exit %d\n%s\n%s", code, out, errOut)
	}
	b, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"version_from": "580"`, `"nvidia-open": "580.95.05-1"`, `"nvidia-fabricmanager-580": "580.95.05-1"`} {
		if !strings.Contains(string(b), w) {
			t.Errorf("the saved plan lacks %s", w)
		}
	}
	// 580.105.08 is a later R580 release (kb/data/gpu-models.tsv).
	a.root.Publish(t, debroot.DriverDebs("580.105.08", true)...)
	a.root.Publish(t, debroot.FabricManagerDeb("580.105.08"))
	a.root.Run(t, "apt-get update -q >/dev/null")
	code, out, errOut = runCLI(t, "", "apply", "-ssh-config", a.root.SSHConfig, "-known-hosts", a.root.KnownHosts, "-identity", a.root.Identity, saved)
	if code != ExitOK {
		t.Fatalf("apply of the saved plan: exit %d\n%s\n%s\ndpkg:\n%s", code, out, errOut, a.dpkg())
	}
	if !strings.Contains(out+errOut, "install nvidia-open=580.95.05-1") {
		t.Errorf("apply did not give apt the exact release:\n%s\n%s", out, errOut)
	}
	a.converged([]string{"nvidia-open 580.95.05-1", "nvidia-kernel-open-580 580.95.05-1", "nvidia-fabricmanager-580 580.95.05-1", "nvidia-driver-pinning-580 580.95.05-1"},
		[]string{"nvidia-open", "nvidia-kernel-open-580", "nvidia-fabricmanager-580", "nvidia-driver-pinning-580"})
}

// TestAptWaitsForABusyDpkg starts a dpkg run that holds the lock for a few
// seconds (a killed apply's dpkg, unattended-upgrades) and applies at once:
// apt waits for the lock instead of failing with "Could not get lock".
func TestAptWaitsForABusyDpkg(t *testing.T) {
	t.Parallel()
	busy := debroot.Deb{Name: "gpuform-test-busy", Version: "1", Postinst: "#!/bin/sh\n: >/run/busy-started\nsleep 4\n"}
	a := startAptNode(t, append(debroot.NVIDIARepo(), busy))
	a.spec(`  nccl { version = "2.21.5-1+cuda12.4" }`)
	cmd, err := a.root.Command(t.Context(), "apt-get install -y -q gpuform-test-busy >/run/busy.log 2>&1")
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	a.root.Run(t, "i=0; while [ ! -e /run/busy-started ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; [ -e /run/busy-started ]")
	a.apply()
	a.converged([]string{"libnccl2 2.21.5-1+cuda12.4", "libnccl-dev 2.21.5-1+cuda12.4"}, []string{"libnccl2", "libnccl-dev"})
}

// TestAptFloatingBranch asks for branch "580" of the open driver with a
// newer branch (590) in the repository. Without a lock the plan resolves
// the branch to its newest release (580.95.05, shown before apply) and
// installs it with fabric manager of exactly that release and NVIDIA's
// branch pinning package, never 590.
func TestAptFloatingBranch(t *testing.T) {
	t.Parallel()
	a := startAptNode(t, nil)
	a.spec(`  driver {
    version        = "580"
    kernel_module  = "open"
    fabric_manager = true
  }`)
	code, out, errOut := a.cli("", "plan", "-detailed-exitcode")
	if code != ExitReport || strings.Count(out, `"580.95.05"`) < 2 || strings.Contains(out, "590") {
		t.Fatalf("plan does not resolve 580 to 580.95.05 for the driver and fabric manager (exit %d):\n%s\n%s", code, out, errOut)
	}
	a.apply()
	a.converged([]string{"nvidia-open 580.95.05-1", "nvidia-kernel-open-580 580.95.05-1", "nvidia-fabricmanager-580 580.95.05-1", "nvidia-driver-pinning-580 580.95.05-1"},
		[]string{"nvidia-open", "nvidia-kernel-open-580", "nvidia-fabricmanager-580", "nvidia-driver-pinning-580"})
}

// TestAptFloatingBranchFollowsTheInstalledDriverAndTheLock: with driver
// 580.65.06 installed, a floating "580" with fabric_manager installs
// fabric manager 580.65.06 (the driver's release, not the newest) and says
// so in the plan; gpuform lock records what is installed; and once the
// packages are gone, the lock, not the repository's newest release, says
// what to install.
func TestAptFloatingBranchFollowsTheInstalledDriverAndTheLock(t *testing.T) {
	t.Parallel()
	a := startAptNode(t, nil)
	a.spec(`  driver {
    version       = "580.65.06"
    kernel_module = "open"
  }`)
	a.apply()
	a.spec(`  driver {
    version        = "580"
    kernel_module  = "open"
    fabric_manager = true
  }`)
	code, out, errOut := a.cli("", "plan", "-detailed-exitcode")
	if code != ExitReport || !strings.Contains(out, `= "580.65.06"`) || strings.Contains(out, "580.95.05") {
		t.Fatalf("plan: fabric manager is not the installed driver's release (exit %d):\n%s\n%s", code, out, errOut)
	}
	a.apply()
	want := []string{"nvidia-open 580.65.06-1", "nvidia-kernel-open-580 580.65.06-1", "nvidia-fabricmanager-580 580.65.06-1", "nvidia-driver-pinning-580 580.95.05-1"}
	held := []string{"nvidia-open", "nvidia-kernel-open-580", "nvidia-fabricmanager-580", "nvidia-driver-pinning-580"}
	a.converged(want, held)

	if code, out, errOut := a.cli("", "lock"); code != ExitOK {
		t.Fatalf("lock: exit %d\n%s\n%s", code, out, errOut)
	}
	lock, err := os.ReadFile(filepath.Join(a.dir, ".gpuform.lock.hcl"))
	if err != nil || strings.Count(string(lock), `"580.65.06"`) != 2 || !strings.Contains(string(lock), "fabric_manager") {
		t.Fatalf("lock file (%v):\n%s", err, lock)
	}
	a.root.Run(t, "apt-get purge -y -q --allow-change-held-packages nvidia-open nvidia-kernel-open-580 nvidia-fabricmanager-580 nvidia-driver-pinning-580")
	code, out, errOut = a.cli("", "plan", "-detailed-exitcode")
	if code != ExitReport || !strings.Contains(out, `"580.65.06"`) || strings.Contains(out, `"580.95.05"`) {
		t.Fatalf("plan with a lock does not install the locked release (exit %d):\n%s\n%s", code, out, errOut)
	}
	a.apply()
	a.converged(want, held)
}

// TestAptHoldSetBySomeoneElse: an operator held libnccl2 at 2.20.5 by
// hand. A spec asking for 2.21.5 does not silently override it: the plan
// names the hold and how to consent (lift it); after apt-mark unhold, the
// plan goes through and the hold becomes gpuform's. A hold someone else set
// on a package already at the wanted release is left alone.
func TestAptHoldSetBySomeoneElse(t *testing.T) {
	t.Parallel()
	a := startAptNode(t, nil)
	a.root.Run(t, "apt-get install -y -q libnccl2=2.20.5-1+cuda12.4 libnccl-dev=2.20.5-1+cuda12.4 && apt-mark hold libnccl2 libnccl-dev")
	a.spec(`  nccl { version = "2.20.5-1+cuda12.4" }`)
	// The spec adopts the package it finds at its release (managed_by
	// only) and leaves the hold alone.
	if code, out, errOut := a.cli("", "plan", "-detailed-exitcode"); code != ExitReport || !strings.Contains(out, `~ managed_by = "(no record)" -> `) || strings.Contains(out, "held") || !strings.Contains(out, "Plan: 0 to add, 1 to change, 0 to destroy.") {
		t.Errorf("a foreign hold at the wanted release: exit %d\n%s\n%s", code, out, errOut)
	}
	a.spec(`  nccl { version = "2.21.5-1+cuda12.4" }`)
	code, out, errOut := a.cli("", "plan", "-detailed-exitcode")
	if code != ExitFailed || !strings.Contains(out+errOut, "libnccl2 2.20.5, libnccl-dev 2.20.5 held by someone other than gpuform") || !strings.Contains(out+errOut, "apt-mark unhold libnccl2 libnccl-dev") {
		t.Fatalf("plan over a foreign hold: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	if code, _, _ := a.cli("", "apply", "-auto-approve"); code != ExitFailed {
		t.Fatalf("apply over a hold someone else set: exit %d, want %d", code, ExitFailed)
	}
	if st := a.dpkg(); !strings.Contains(st, "libnccl2 2.20.5-1+cuda12.4 hi") {
		t.Fatalf("the foreign hold was changed:\n%s", st)
	}
	a.root.Run(t, "apt-mark unhold libnccl2 libnccl-dev")
	a.apply()
	a.converged([]string{"libnccl2 2.21.5-1+cuda12.4", "libnccl-dev 2.21.5-1+cuda12.4"}, []string{"libnccl2", "libnccl-dev"})
	if out := a.root.Run(t, "cat /var/lib/gpuform/apt-holds"); out != "libnccl-dev\nlibnccl2\n" {
		t.Errorf("gpuform's own holds: %q", out)
	}
}

// TestAptKilledApplyFollowedByAnother kills gpuform (SIGKILL) while apt
// runs NCCL's postinst on the node, and applies again at once: the second
// apply does not start a second apt next to the orphaned one (it fails
// fast naming it), and once the orphan has finished, the next apply
// converges with every hold in place and dpkg clean.
func TestAptKilledApplyFollowedByAnother(t *testing.T) {
	t.Parallel()
	bin := buildGpuform(t)
	// The postinst runs until the test removes /run/slow-postinst (at most
	// a minute), so the orphan is still running when the second apply starts.
	debs := ncclWithPostinst("#!/bin/sh\nif [ -e /run/slow-postinst ]; then : >/run/in-postinst; i=0; while [ -e /run/slow-postinst ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; fi\nexit 0\n")
	a := startAptNode(t, debs)
	a.spec(`  nccl { version = "2.21.5" }`)
	a.root.Run(t, ": >/run/slow-postinst")
	p := startGpuform(t, bin, nil, "apply", "-auto-approve", "-ssh-config", a.root.SSHConfig, "-known-hosts", a.root.KnownHosts, "-identity", a.root.Identity, a.dir)
	a.root.Run(t, "i=0; while [ ! -e /run/in-postinst ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; [ -e /run/in-postinst ]")
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	if out, err := a.root.Exec("pgrep -x apt-get"); err != nil {
		t.Fatalf("no apt-get runs on the node once gpuform is killed (%v %s): the scenario needs the orphan", err, out)
	}

	code, out, errOut := a.cli("", "apply", "-auto-approve")
	if code != ExitFailed || !strings.Contains(out+errOut, "still running") {
		t.Fatalf("second apply next to an orphaned apt: exit %d, want %d naming the apt still running\n%s\n%s", code, ExitFailed, out, errOut)
	}
	// The orphan's postinst ends, and so does its apt.
	a.root.Run(t, "rm -f /run/slow-postinst")
	a.root.Run(t, "i=0; while pgrep -x apt-get >/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; ! pgrep -x apt-get")
	a.apply()
	a.converged([]string{"libnccl2 2.21.5-1+cuda12.4", "libnccl-dev 2.21.5-1+cuda12.4"}, []string{"libnccl2", "libnccl-dev"})
}

// rpmNode is aptNode on the Rocky-like root with Debian's dnf and rpm.
func startRPMNode(t *testing.T) *aptNode {
	t.Helper()
	return startRootNode(t, debroot.Options{RPM: true, RPMs: debroot.NVIDIARPMs()})
}

// rpmConverged checks rpm -qa (the test packages), the version locks and a
// second plan with no changes.
func (a *aptNode) rpmConverged(want []string, locked []string) {
	a.t.Helper()
	out := a.root.Run(a.t, `rpm -qa --qf '%{NAME} %{VERSION}-%{RELEASE}\n' | grep -E 'nvidia|nccl' | sort`)
	sort.Strings(want)
	if strings.TrimSpace(out) != strings.Join(want, "\n") {
		a.t.Errorf("rpm -qa:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
	}
	locks := a.root.Run(a.t, "grep -v '^#' /etc/dnf/plugins/versionlock.list | grep . | sed 's/-[0-9]*:.*//' | sort -u")
	sort.Strings(locked)
	if strings.Join(strings.Fields(locks), " ") != strings.Join(locked, " ") {
		a.t.Errorf("version locks:\n%s\nwant %v", locks, locked)
	}
	a.planConverged()
}

// TestDnfInstallDowngradeBranchChangeAndMissingRelease runs the package
// scenarios with the real dnf and rpm: a fresh install with version locks,
// a downgrade of the driver and NCCL through their locks, a branch change
// whose fabric manager conflicts with the old one (dnf --allowerasing), a
// missing release, which plan refuses before anything runs, and a floating
// branch resolved against dnf's metadata and installed exactly.
func TestDnfInstallDowngradeBranchChangeAndMissingRelease(t *testing.T) {
	t.Parallel()
	a := startRPMNode(t)
	spec := func(drv, nccl string) string {
		return `  driver {
    version        = "` + drv + `"
    kernel_module  = "open"
    fabric_manager = true
  }
  nccl { version = "` + nccl + `" }`
	}
	locked := []string{"libnccl", "libnccl-devel", "nvidia-fabricmanager-580", "nvidia-open"}
	a.spec(spec("580.95.05", "2.21.5-1+cuda12.4"))
	a.apply()
	a.rpmConverged([]string{"nvidia-open 580.95.05-1", "nvidia-kernel-open-580 580.95.05-1", "nvidia-fabricmanager-580 580.95.05-1", "libnccl 2.21.5-1+cuda12.4", "libnccl-devel 2.21.5-1+cuda12.4"}, locked)

	a.spec(spec("580.65.06", "2.20.5-1+cuda12.4"))
	code, out, errOut := a.cli("", "plan", "-detailed-exitcode")
	if code != ExitReport || !strings.Contains(out, "downgrades nvidia-open 580.95.05 -> 580.65.06") || !strings.Contains(out, "libnccl 2.21.5 -> 2.20.5, libnccl-devel 2.21.5 -> 2.20.5") {
		t.Errorf("plan of a downgrade: exit %d\n%s\n%s", code, out, errOut)
	}
	a.apply()
	a.rpmConverged([]string{"nvidia-open 580.65.06-1", "nvidia-kernel-open-580 580.65.06-1", "nvidia-fabricmanager-580 580.65.06-1", "libnccl 2.20.5-1+cuda12.4", "libnccl-devel 2.20.5-1+cuda12.4"}, locked)

	a.spec(spec("590.44.01", "2.20.5-1+cuda12.4"))
	a.apply()
	a.rpmConverged([]string{"nvidia-open 590.44.01-1", "nvidia-kernel-open-590 590.44.01-1", "nvidia-fabricmanager-590 590.44.01-1", "libnccl 2.20.5-1+cuda12.4", "libnccl-devel 2.20.5-1+cuda12.4"},
		[]string{"libnccl", "libnccl-devel", "nvidia-fabricmanager-590", "nvidia-open"})

	// 580.82.07 is a real release (cuda-driver.tsv) the repository lacks:
	// plan refuses the host naming it and dnf, and apply runs no step.
	a.spec(spec("580.82.07", "2.20.5-1+cuda12.4"))
	code, out, errOut = a.cli("", "apply", "-auto-approve")
	if code != ExitFailed || !strings.Contains(strings.Join(strings.Fields(out+errOut), " "), "package release: expected nvidia-open 580.82.07 (driver_package) from a repository of the host; found no repository dnf uses on this host offers it: dnf offers nvidia-open 590.44.01-1, 580.95.05-1, 580.65.06-1") {
		t.Errorf("apply of a missing release: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	if locks := a.root.Run(t, "cat /etc/dnf/plugins/versionlock.list"); !strings.Contains(locks, "nvidia-open-0:590.44.01-1.*") {
		t.Errorf("the driver's version lock changed although apply was refused:\n%s", locks)
	}
	if out := a.root.Run(t, "rpm -q nvidia-open"); !strings.HasPrefix(out, "nvidia-open-590.44.01-1") {
		t.Errorf("the driver changed although apply was refused: %s", out)
	}

	// A floating branch resolves against dnf's metadata to the newest
	// release of it, shown and installed exactly.
	a.spec(spec("580", "2.20.5-1+cuda12.4"))
	code, out, errOut = a.cli("", "plan")
	if code != ExitOK || !regexp.MustCompile(`~ version +?= "590.44.01" -> "580.95.05" \(from "580"\)`).MatchString(out) {
		t.Errorf("plan of branch 580: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = a.cli("", "apply", "-auto-approve")
	if code != ExitOK || !strings.Contains(out+errOut, "install nvidia-open-580.95.05-1") {
		t.Errorf("apply did not give dnf the exact release: exit %d\n%s\n%s", code, out, errOut)
	}
	a.rpmConverged([]string{"nvidia-open 580.95.05-1", "nvidia-kernel-open-580 580.95.05-1", "nvidia-fabricmanager-580 580.95.05-1", "libnccl 2.20.5-1+cuda12.4", "libnccl-devel 2.20.5-1+cuda12.4"}, locked)
}

// TestAptInterruptedDpkgThatCannotBeRepairedStops: a postinst that fails
// leaves libnccl2 half-configured; apply runs dpkg --configure -a, which
// fails too, and stops there with dpkg's error first and the command to
// run, changing nothing else. Once the package is fixed, apply converges.
func TestAptInterruptedDpkgThatCannotBeRepairedStops(t *testing.T) {
	t.Parallel()
	debs := ncclWithPostinst("#!/bin/sh\n[ -e /run/postinst-ok ] || { echo 'libnccl2: cannot configure' >&2; exit 1; }\n")
	a := startAptNode(t, debs)
	a.spec(`  nccl { version = "2.21.5" }`)
	if out, err := a.root.Exec("apt-get install -y -q libnccl2=2.21.5-1+cuda12.4"); err == nil {
		t.Fatalf("the failing postinst succeeded:\n%s", out)
	}
	code, out, errOut := a.cli("", "apply", "-auto-approve")
	all := out + errOut
	if code != ExitFailed || !strings.Contains(all, "dpkg_interrupted: dpkg --configure -a") || !strings.Contains(all, "exit status 1: dpkg: error processing package libnccl2 (--configure):") ||
		!strings.Contains(all, "then run 'dpkg --configure -a' on the node") {
		t.Fatalf("apply over an unrepairable dpkg: exit %d, want 1\n%s", code, all)
	}
	if st := a.dpkg(); strings.Contains(st, "libnccl-dev") {
		t.Errorf("apply went on past the failed repair:\n%s", st)
	}
	t.Logf("the failure as the operator sees it:\n%s", errOut)
	a.root.Run(t, ": >/run/postinst-ok")
	a.apply()
	a.converged([]string{"libnccl2 2.21.5-1+cuda12.4", "libnccl-dev 2.21.5-1+cuda12.4"}, []string{"libnccl2", "libnccl-dev"})
}

// ncclWithPostinst is the NVIDIA test repository with libnccl2
// 2.21.5-1+cuda12.4 given the postinst script (to make its configuration
// slow or failing).
func ncclWithPostinst(script string) []debroot.Deb {
	debs := debroot.NVIDIARepo()
	for i, d := range debs {
		if d.Name == "libnccl2" && d.Version == "2.21.5-1+cuda12.4" {
			debs[i].Postinst = script
		}
	}
	return debs
}
