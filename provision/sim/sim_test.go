package sim_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/transport"
)

var _ transport.Transport = (*sim.Transport)(nil)

func TestNames(t *testing.T) {
	want := []string{"dgx-a100", "gb200-nvl72-tray", "gb300-nvl72-tray", "gh200", "hgx-h100-converged", "hgx-h100-degraded", "hgx-h100-notools", "hgx-h100-slownic", "hgx-h100-stale", "hgx-h100-xid79", "l40s-rocky9", "no-driver"}
	if diff := cmp.Diff(want, sim.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	for _, n := range want {
		if d, err := sim.Description(n); err != nil || d == "" {
			t.Errorf("Description(%s) = %q, %v", n, d, err)
		}
	}
}

func TestParseHost(t *testing.T) {
	tests := map[string]struct {
		profile, instance string
		ok                bool
	}{
		"sim://hgx-h100-stale":        {"hgx-h100-stale", "", true},
		"sim://hgx-h100-stale/node07": {"hgx-h100-stale", "node07", true},
		"gpu01.example.com":           {"", "", false},
		"sim://":                      {"", "", false},
		// Instances name directories: nothing that could climb out.
		"sim://hgx-h100-stale/..":    {"", "", false},
		"sim://hgx-h100-stale/a/b":   {"", "", false},
		"sim://hgx h100":             {"", "", false},
		"ssh://sim://hgx-h100-stale": {"", "", false},
	}
	for in, tc := range tests {
		t.Run(in, func(t *testing.T) {
			p, i, ok := sim.ParseHost(in)
			if p != tc.profile || i != tc.instance || ok != tc.ok {
				t.Errorf("ParseHost(%q) = %q, %q, %v", in, p, i, ok)
			}
		})
	}
}

// newNode materialises a profile in a fresh state directory.
func newNode(t *testing.T, profile string) (*sim.Transport, string) {
	t.Helper()
	root, err := sim.Materialize(profile, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return sim.New("sim://"+profile, root), root
}

// run runs a script on the node and fails the test on a transport error.
func run(t *testing.T, tr transport.Transport, script string, env ...string) transport.Result {
	t.Helper()
	cmd := transport.Command{Script: script, Env: map[string]string{}}
	for i := 0; i+1 < len(env); i += 2 {
		cmd.Env[env[i]] = env[i+1]
	}
	res, err := tr.Run(context.Background(), cmd)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func probe(t *testing.T, tr transport.Transport) *facts.Node {
	t.Helper()
	n, err := facts.Probe(context.Background(), tr, facts.Options{Reads: resource.Reads()})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMaterializeKeepsState(t *testing.T) {
	state := t.TempDir()
	root, err := sim.Materialize("gh200", state)
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(root, "etc", "gpuform-test")
	if err := os.WriteFile(marker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := sim.Materialize("gh200", state)
	if err != nil || again != root {
		t.Fatalf("second Materialize = %q, %v", again, err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("a change to the root did not survive Materialize: %v", err)
	}
	if err := sim.Reset(root); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.Materialize("gh200", state); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("Reset kept a change")
	}
	// Reset must never remove a directory that is not a simulated root.
	other := t.TempDir()
	if err := sim.Reset(other); err == nil || !strings.Contains(err.Error(), "not a simulated node root") {
		t.Errorf("Reset of a plain directory: %v", err)
	}
	if _, err := sim.Materialize("nope", state); err == nil || !strings.Contains(err.Error(), "unknown simulated profile") {
		t.Errorf("unknown profile: %v", err)
	}
}

func TestMaterializeHostInstances(t *testing.T) {
	state := t.TempDir()
	a, err := sim.MaterializeHost("sim://gh200/node01", state)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sim.MaterializeHost("sim://gh200/node02", state)
	if err != nil {
		t.Fatal(err)
	}
	if a == b || filepath.Dir(a) != filepath.Dir(b) {
		t.Errorf("instances share or scatter roots: %s %s", a, b)
	}
	if _, err := sim.MaterializeHost("gpu01", state); err == nil {
		t.Error("MaterializeHost accepted a non-sim host")
	}
}

// TestAptInstall installs the converged driver stack on the stale node with
// the stand-ins and reads the result back through the real probe.
func TestAptInstall(t *testing.T) {
	tr, root := newNode(t, "hgx-h100-stale")
	res := run(t, tr, "apt-get install -y nvidia-driver-550=550.127.08-0ubuntu1 cuda-toolkit-12-4 && apt-mark hold nvidia-driver-550 && apt-get install -y 'nvidia-fabricmanager-550=550.127.08-*'")
	if res.ExitCode != 0 {
		t.Fatalf("install failed: %s", res.Stderr)
	}
	n := probe(t, tr)
	if v, ok := n.Package("nvidia-driver-550"); !ok || v != "550.127.08-0ubuntu1" || !n.PackageHeld("nvidia-driver-550") {
		t.Errorf("nvidia-driver-550 = %q %v held %v", v, ok, n.PackageHeld("nvidia-driver-550"))
	}
	if v, _ := n.Package("nvidia-fabricmanager-550"); v != "550.127.08-1" {
		t.Errorf("version glob installed fabric manager %q", v)
	}
	if tk, ok := n.CUDAToolkit("12.4"); !ok || !tk.Default || tk.Path != "/usr/local/cuda-12.4" {
		t.Errorf("cuda toolkit = %+v %v", tk, ok)
	}
	// A new driver is live only after a reboot.
	if n.Driver.Version != "535.183.06" || !n.PendingReboot {
		t.Errorf("after install: driver %s pending reboot %v, want the old driver and a pending reboot", n.Driver.Version, n.PendingReboot)
	}
	if res := run(t, tr, "reboot"); res.ExitCode != 0 {
		t.Fatalf("reboot: %s", res.Stderr)
	}
	n = probe(t, tr)
	if n.Driver.Version != "550.127.08" || n.PendingReboot {
		t.Errorf("after reboot: driver %s pending %v", n.Driver.Version, n.PendingReboot)
	}
	log, err := os.ReadFile(filepath.Join(root, "var/log/gpuform-sim/calls.log"))
	if err != nil || !strings.HasPrefix(string(log), "apt-get install -y nvidia-driver-550=550.127.08-0ubuntu1 cuda-toolkit-12-4\napt-mark hold nvidia-driver-550\napt-get install -y nvidia-fabricmanager-550=550.127.08-*\n") {
		t.Errorf("calls.log = %q, %v", log, err)
	}
}

func TestStandInRefusals(t *testing.T) {
	tests := map[string]struct {
		profile, script string
		env             []string
		wantCode        int
		wantErr         string
	}{
		"unknown version glob": {
			profile: "hgx-h100-stale", script: "apt-get install -y 'nvidia-open=999.1-*'",
			wantCode: 100, wantErr: "E: Version '999.1-*' for 'nvidia-open' was not found",
		},
		"unknown version": {
			profile: "hgx-h100-stale", script: "apt-get install -y nvidia-driver-550=550.0.0-1",
			wantCode: 100, wantErr: "E: Version '550.0.0-1' for 'nvidia-driver-550' was not found",
		},
		"unknown package": {
			profile: "hgx-h100-stale", script: "apt-get install -y nvidia-driver-999",
			wantCode: 100, wantErr: "E: Unable to locate package nvidia-driver-999",
		},
		"held package": {
			profile: "hgx-h100-converged", script: "apt-get install -y libnccl2=2.25.1-1+cuda12.8",
			wantCode: 100, wantErr: "--allow-change-held-packages",
		},
		"dnf versionlock": {
			profile: "l40s-rocky9", script: "dnf -y install nvidia-driver-3:560.35.03-1.el9",
			wantCode: 1, wantErr: "excluded by versionlock",
		},
		"fail switch env": {
			profile: "hgx-h100-stale", script: "systemctl start docker", env: []string{"GPUFORM_SIM_FAIL", "apt-get,systemctl"},
			wantCode: 100, wantErr: "systemctl: simulated failure",
		},
		"fail switch file": {
			profile: "hgx-h100-stale", script: "mkdir -p $GPUFORM_ROOT/var/lib/gpuform-sim/fail && echo 'E: dpkg was interrupted' > $GPUFORM_ROOT/var/lib/gpuform-sim/fail/apt-get && apt-get update",
			wantCode: 100, wantErr: "E: dpkg was interrupted",
		},
		"module without driver": {
			profile: "no-driver", script: "modprobe nvidia-peermem",
			wantCode: 1, wantErr: "Module nvidia-peermem not found",
		},
		"missing unit": {
			profile: "no-driver", script: "systemctl enable --now nvidia-fabricmanager",
			wantCode: 1, wantErr: "Unit file nvidia-fabricmanager.service does not exist",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tr, _ := newNode(t, tc.profile)
			before := probe(t, tr)
			res := run(t, tr, tc.script, tc.env...)
			if res.ExitCode != tc.wantCode || !strings.Contains(string(res.Stderr), tc.wantErr) {
				t.Errorf("exit %d stderr %q, want %d and %q", res.ExitCode, res.Stderr, tc.wantCode, tc.wantErr)
			}
			// A refused command changes nothing the probe can see.
			if diff := cmp.Diff(before, probe(t, tr)); diff != "" {
				t.Errorf("refused command changed the node:\n%s", diff)
			}
		})
	}
}

func TestServicesModulesSysctlShm(t *testing.T) {
	tr, _ := newNode(t, "hgx-h100-stale")
	script := `set -e
apt-get install -y nvidia-fabricmanager-550=550.127.08-1
systemctl enable --now nvidia-fabricmanager nvidia-persistenced
modprobe nvidia-peermem
sysctl -w kernel.numa_balancing=0
mkdir -p "$GPUFORM_ROOT/etc/sysctl.d"
printf 'vm.nr_hugepages = 16\n' > "$GPUFORM_ROOT/etc/sysctl.d/91-gpuform-hugepages.conf"
sysctl -q -p /etc/sysctl.d/91-gpuform-hugepages.conf
mount -o 'remount,size=16G' /dev/shm
systemctl disable --now docker.service
`
	if res := run(t, tr, script); res.ExitCode != 0 {
		t.Fatalf("script failed: %s", res.Stderr)
	}
	n := probe(t, tr)
	want := map[string]facts.UnitState{
		"nvidia-fabricmanager.service": {Enabled: "enabled", Active: "active"},
		"nvidia-persistenced.service":  {Enabled: "enabled", Active: "active"},
		"docker.service":               {Enabled: "disabled", Active: "inactive"},
	}
	for u, w := range want {
		if got := n.Unit(u); got != w {
			t.Errorf("%s = %+v, want %+v", u, got, w)
		}
	}
	if !n.HasModule("nvidia-peermem") {
		t.Error("nvidia_peermem not loaded")
	}
	if v, _ := n.Sysctl("vm.nr_hugepages"); v != "16" || n.HugePages.Total != 16 {
		t.Errorf("nr_hugepages = %q, HugePages_Total = %d, want 16", v, n.HugePages.Total)
	}
	if v, _ := n.Sysctl("kernel.numa_balancing"); v != "0" {
		t.Errorf("numa_balancing = %q", v)
	}
	if n.Shm.SizeBytes != 16<<30 || n.Shm.SizeFromDefault {
		t.Errorf("shm = %+v", n.Shm)
	}
	// try-restart leaves a stopped unit stopped.
	res := run(t, tr, "systemctl try-restart docker.service; systemctl is-active nvidia-fabricmanager; systemctl is-enabled docker; systemctl is-active docker")
	if string(res.Stdout) != "active\ndisabled\ninactive\n" || res.ExitCode != 3 {
		t.Errorf("is-active/is-enabled: %q exit %d", res.Stdout, res.ExitCode)
	}
	// list-unit-files, as the facts probe asks it on a live root: the
	// is-enabled state of each name that has a unit file, silent for one
	// without, exit 1 when none has.
	res = run(t, tr, "systemctl list-unit-files --no-legend --no-pager --full -- nvidia-fabricmanager.service nope.service docker.service")
	if string(res.Stdout) != "nvidia-fabricmanager.service enabled\ndocker.service disabled\n" || res.ExitCode != 0 {
		t.Errorf("list-unit-files: %q exit %d", res.Stdout, res.ExitCode)
	}
	res = run(t, tr, "systemctl list-unit-files --no-legend -- nope.service")
	if len(res.Stdout) != 0 || res.ExitCode != 1 {
		t.Errorf("list-unit-files of a unit with no file: %q exit %d", res.Stdout, res.ExitCode)
	}
}

func TestRPMAndDnf(t *testing.T) {
	tr, _ := newNode(t, "l40s-rocky9")
	script := `set -e
dnf versionlock delete nvidia-driver
dnf -y install nvidia-driver-3:560.35.03-1.el9 libnccl-2.25.1-1+cuda12.8
dnf versionlock add nvidia-driver
rpm -q nvidia-driver
`
	res := run(t, tr, script)
	if res.ExitCode != 0 {
		t.Fatalf("dnf failed: %s", res.Stderr)
	}
	if !strings.Contains(string(res.Stdout), "nvidia-driver-560.35.03-1.el9.x86_64\n") {
		t.Errorf("rpm -q printed %q", res.Stdout)
	}
	n := probe(t, tr)
	if n.Packages.Manager != facts.ManagerRPM {
		t.Fatalf("manager = %q", n.Packages.Manager)
	}
	if v, _ := n.Package("nvidia-driver"); v != "3:560.35.03-1.el9" || !n.PackageHeld("nvidia-driver") {
		t.Errorf("nvidia-driver = %q held %v locks %q", v, n.PackageHeld("nvidia-driver"), n.Packages.Locks)
	}
	if v, _ := n.Package("libnccl"); v != "2.25.1-1+cuda12.8" || n.PackageHeld("libnccl") {
		t.Errorf("libnccl = %q", v)
	}
}

func TestGrub(t *testing.T) {
	tr, _ := newNode(t, "hgx-h100-stale")
	script := `set -e
mkdir -p "$GPUFORM_ROOT/etc/default/grub.d"
printf 'GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX iommu=pt"\n' > "$GPUFORM_ROOT/etc/default/grub.d/90-gpuform.cfg"
update-grub
`
	if res := run(t, tr, script); res.ExitCode != 0 {
		t.Fatalf("update-grub: %s", res.Stderr)
	}
	n := probe(t, tr)
	if _, ok := n.Kernel.Arg("iommu"); ok {
		t.Error("kernel command line changed before reboot")
	}
	if diff := cmp.Diff([]string{"iommu=pt"}, n.Grub.CmdlineLinux); diff != "" {
		t.Errorf("grub (-want +got):\n%s", diff)
	}
	run(t, tr, "reboot")
	n = probe(t, tr)
	if v, ok := n.Kernel.Arg("iommu"); !ok || v != "pt" {
		t.Errorf("after reboot cmdline = %q", n.Kernel.Cmdline)
	}
}

// TestStandInOutsideRoot: a stand-in run without a simulated root must
// refuse rather than touch the real machine.
func TestStandInOutsideRoot(t *testing.T) {
	_, root := newNode(t, "gh200")
	out, err := runPlain(filepath.Join(root, sim.BinDir, "apt-get"), "GPUFORM_ROOT="+t.TempDir())
	if err == nil || !strings.Contains(out, "outside a simulated root") {
		t.Errorf("stand-in outside a root: %q %v", out, err)
	}
}

// TestNestedCallsNotLogged: a stand-in that runs another (reboot applying
// sysctl.d) records only the outer call, so call logs read like what the
// operator's tool ran.
func TestNestedCallsNotLogged(t *testing.T) {
	tr, root := newNode(t, "hgx-h100-converged")
	before := probe(t, tr)
	if res := run(t, tr, "reboot && dpkg -s libnccl2 >/dev/null"); res.ExitCode != 0 {
		t.Fatalf("reboot: %s", res.Stderr)
	}
	log, err := os.ReadFile(filepath.Join(root, "var/log/gpuform-sim/calls.log"))
	if err != nil || string(log) != "reboot \ndpkg -s libnccl2\n" {
		t.Errorf("calls.log = %q, %v", log, err)
	}
	// A converged node comes back from reboot exactly as it was: its boot
	// configuration (modules-load.d, sysctl.d, fstab, enabled units)
	// reproduces its running state.
	if diff := cmp.Diff(before, probe(t, tr)); diff != "" {
		t.Errorf("reboot changed a converged node (-before +after):\n%s", diff)
	}
}

func TestGrubby(t *testing.T) {
	tr, _ := newNode(t, "l40s-rocky9")
	res := run(t, tr, `grubby --update-kernel=ALL --args="iommu=pt crashkernel=auto" && grubby --update-kernel=ALL --remove-args=resume && grubby --info=ALL`)
	if res.ExitCode != 0 {
		t.Fatalf("grubby: %s", res.Stderr)
	}
	if !strings.Contains(string(res.Stdout), "iommu=pt crashkernel=auto") || strings.Contains(string(res.Stdout), "resume=") {
		t.Errorf("grubby --info = %q", res.Stdout)
	}
	if _, ok := probe(t, tr).Kernel.Arg("iommu"); ok {
		t.Error("kernel arguments changed before reboot")
	}
	run(t, tr, "reboot")
	n := probe(t, tr)
	if v, _ := n.Kernel.Arg("crashkernel"); v != "auto" {
		t.Errorf("crashkernel = %q: an added key must replace the old value", v)
	}
	if _, ok := n.Kernel.Arg("resume"); ok {
		t.Error("removed argument still present")
	}
	if v, _ := n.Kernel.Arg("iommu"); v != "pt" {
		t.Errorf("after reboot cmdline = %q", n.Kernel.Cmdline)
	}
}

// TestMaterializeConcurrent: hosts of a fleet are probed in parallel, and
// two of them may be the same simulated node.
func TestMaterializeConcurrent(t *testing.T) {
	state := t.TempDir()
	errs := make(chan error, 4)
	roots := make(chan string, 4)
	for range 4 {
		go func() {
			r, err := sim.Materialize("gh200", state)
			errs <- err
			roots <- r
		}()
	}
	first := ""
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
		r := <-roots
		if first == "" {
			first = r
		} else if r != first {
			t.Errorf("roots differ: %s %s", r, first)
		}
	}
	entries, _ := os.ReadDir(state)
	if len(entries) != 1 {
		t.Errorf("state dir holds %d entries, want only the root (no leftover temporaries)", len(entries))
	}
}

// TestRebootAppliesTmpfiles: a governor set through tmpfiles.d is what the
// node runs after a reboot.
func TestRebootAppliesTmpfiles(t *testing.T) {
	tr, _ := newNode(t, "hgx-h100-stale")
	script := `set -e
mkdir -p "$GPUFORM_ROOT/etc/tmpfiles.d"
printf 'w /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor - - - - performance\n' > "$GPUFORM_ROOT/etc/tmpfiles.d/90-gpuform-governor.conf"
reboot
`
	if res := run(t, tr, script); res.ExitCode != 0 {
		t.Fatalf("reboot: %s", res.Stderr)
	}
	if g := probe(t, tr).CPU.Governors; len(g) != 1 || g[0] != "performance" {
		t.Errorf("governors after reboot = %q", g)
	}
}

// TestMaterializeRefusesForeignState: a root or state directory gpuform
// did not make — no marker, a symlink, writable by others, a planted
// stand-in directory — is refused, and nothing in it is run.
func TestMaterializeRefusesForeignState(t *testing.T) {
	const profile = "gh200"
	tests := map[string]struct {
		// prepare damages a fresh state directory holding a good root.
		prepare func(t *testing.T, state, root string) string
		want    string
	}{
		"marker missing": {
			prepare: func(t *testing.T, state, root string) string {
				must(t, os.Remove(filepath.Join(root, sim.MarkerFile)))
				return state
			},
			want: "no .gpuform-sim-root marker",
		},
		"marker forged": {
			prepare: func(t *testing.T, state, root string) string {
				must(t, os.WriteFile(filepath.Join(root, sim.MarkerFile), []byte("gh200\n"), 0o600))
				return state
			},
			want: "was not written by this gpuform",
		},
		"marker is a symlink": {
			prepare: func(t *testing.T, state, root string) string {
				m := filepath.Join(root, sim.MarkerFile)
				must(t, os.Rename(m, m+".real"))
				must(t, os.Symlink(m+".real", m))
				return state
			},
			want: "is a symbolic link",
		},
		"root is a symlink": {
			prepare: func(t *testing.T, state, root string) string {
				elsewhere := filepath.Join(t.TempDir(), "r")
				must(t, os.Rename(root, elsewhere))
				must(t, os.Symlink(elsewhere, root))
				return state
			},
			want: "is a symbolic link",
		},
		"state dir is a symlink": {
			prepare: func(t *testing.T, state, root string) string {
				link := filepath.Join(t.TempDir(), "state")
				must(t, os.Symlink(state, link))
				return link
			},
			want: "is a symbolic link",
		},
		"root writable by others": {
			prepare: func(t *testing.T, state, root string) string {
				must(t, os.Chmod(root, 0o777))
				return state
			},
			want: "writable by other users",
		},
		"state dir writable by group": {
			prepare: func(t *testing.T, state, root string) string {
				must(t, os.Chmod(state, 0o770))
				return state
			},
			want: "writable by other users",
		},
		"stand-ins replaced by a link": {
			prepare: func(t *testing.T, state, root string) string {
				bin := filepath.Join(root, filepath.FromSlash(sim.BinDir))
				other := t.TempDir()
				must(t, os.RemoveAll(bin))
				must(t, os.Symlink(other, bin))
				return state
			},
			want: "is a symbolic link",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			state := t.TempDir()
			root, err := sim.Materialize(profile, state)
			if err != nil {
				t.Fatal(err)
			}
			state = tc.prepare(t, state, root)
			_, err = sim.Materialize(profile, state)
			if err == nil || !strings.Contains(err.Error(), "refusing simulated node state") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Materialize of damaged state = %v, want a refusal naming %q", err, tc.want)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
