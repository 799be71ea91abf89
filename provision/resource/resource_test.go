package resource

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

func TestVersionMatches(t *testing.T) {
	tests := []struct {
		installed, want string
		match           bool
	}{
		{"550.127.08-0ubuntu1", "550.127.08", true},
		{"550.127.08-1", "550.127.08", true},
		{"550.127.081-1", "550.127.08", false}, // a prefix of digits is another release
		{"2.21.5-1+cuda12.4", "2.21.5", true},
		{"2.21.5-1+cuda12.4", "2.21.5-1", true}, // revision given, build suffix free
		{"2.21.5-2+cuda12.4", "2.21.5-1", false},
		{"1:4.6.0-1", "4.6.0", true}, // epoch ignored
		{"550.54.15-1", "550", true}, // a bare branch matches any release of it
		{"535.183.06-1", "550", false},
		{"12.4.1-1", "12.4.1-1", true},
		{"550.127.08", "550.127.08", true}, // a loaded module reports no revision
	}
	for _, tc := range tests {
		if got := versionMatches(tc.installed, tc.want); got != tc.match {
			t.Errorf("versionMatches(%q, %q) = %v, want %v", tc.installed, tc.want, got, tc.match)
		}
	}
}

func TestPackageNames(t *testing.T) {
	tests := map[string]struct {
		set   pkgSet
		names []string
		pins  map[string]string
	}{
		"debian proprietary driver": {driverSet(testKB, FamilyDebian, "proprietary", "550.127.08"), []string{"cuda-drivers-550"}, map[string]string{"cuda-drivers-550": "550.127.08-*"}},
		"debian open driver":        {driverSet(testKB, FamilyDebian, "open", "580.95.05"), []string{"nvidia-open"}, map[string]string{"nvidia-open": "580.95.05-*"}},
		"rhel open driver":          {driverSet(testKB, FamilyRHEL, "open", "580.95.05"), []string{"nvidia-open"}, map[string]string{"nvidia-open": "580.95.05"}},
		// A branch nothing resolved at plan time installs the newest
		// release of the branch, never one of another branch.
		"driver branch": {driverSet(testKB, FamilyDebian, "proprietary", "550"), []string{"cuda-drivers-550"}, map[string]string{"cuda-drivers-550": "550.*"}},
		// Fabric Manager follows the driver's release with its own revision.
		"fabric manager": {fabricManagerSet(testKB, FamilyDebian, "550.127.08-0ubuntu1"), []string{"nvidia-fabricmanager-550"}, map[string]string{"nvidia-fabricmanager-550": "550.127.08-1"}},
		"nccl debian":    {ncclSet(testKB, FamilyDebian, "2.21.5", "12.4.1"), []string{"libnccl2", "libnccl-dev"}, map[string]string{"libnccl2": "2.21.5-1+cuda12.4", "libnccl-dev": "2.21.5-1+cuda12.4"}},
		"nccl rhel":      {ncclSet(testKB, FamilyRHEL, "2.21.5", "12.4.1"), []string{"libnccl", "libnccl-devel"}, map[string]string{"libnccl": "2.21.5-1+cuda12.4", "libnccl-devel": "2.21.5-1+cuda12.4"}},
		"cuda":           {cudaSet(testKB, FamilyDebian, "12.8.1"), []string{"cuda-toolkit-12-8"}, map[string]string{"cuda-toolkit-12-8": "12.8.1-*"}},
		"dcgm 4":         {dcgmSet(testKB, FamilyDebian, "4.6.0", "12.8.1"), []string{"datacenter-gpu-manager-4-cuda12", "datacenter-gpu-manager-4-core"}, map[string]string{"datacenter-gpu-manager-4-cuda12": "1:4.6.0-1", "datacenter-gpu-manager-4-core": "1:4.6.0-1"}},
		"toolkit": {containerToolkitSet(testKB, FamilyDebian, "1.17.8"), []string{"nvidia-container-toolkit", "nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1"},
			map[string]string{"nvidia-container-toolkit": "1.17.8-1", "nvidia-container-toolkit-base": "1.17.8-1", "libnvidia-container-tools": "1.17.8-1", "libnvidia-container1": "1.17.8-1"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.names, tc.set.names); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.pins, tc.set.pins); diff != "" {
				t.Errorf("pins (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSizes(t *testing.T) {
	for in, want := range map[string]string{"16GiB": "16G", "64MiB": "64M", "1536MiB": "1536M", "1000": "1000"} {
		s, err := spec.ParseSize(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := dockerSize(s.Bytes); got != want {
			t.Errorf("dockerSize(%s) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]string{"50%": "50%", "12.5%": "12.5%", "64GiB": "64g", "1536MiB": "1536m", "4KiB": "4k"} {
		s, _ := spec.ParseSize(in)
		if got := tmpfsSize(s); got != want {
			t.Errorf("tmpfsSize(%s) = %s, want %s", in, got, want)
		}
	}
	if !sameSize("50%", "1024g", 2048<<30) || sameSize("50%", "1024g", 1024<<30) {
		t.Error("sameSize does not compare by meaning on the node")
	}
}

type fakeRes struct {
	name string
	deps []string
}

func (f fakeRes) Name() string                     { return f.name }
func (f fakeRes) DependsOn() []string              { return f.deps }
func (f fakeRes) Diff(*facts.Node) (Change, error) { return Change{}, nil }

func TestOrder(t *testing.T) {
	rs := []Resource{fakeRes{"docker", []string{"toolkit"}}, fakeRes{"toolkit", []string{"driver"}}, fakeRes{"sysctl", nil}, fakeRes{"driver", nil}}
	got, err := Order(rs)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got {
		names = append(names, r.Name())
	}
	if diff := cmp.Diff([]string{"driver", "toolkit", "docker", "sysctl"}, names); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	if _, err := Order([]Resource{fakeRes{"a", []string{"b"}}, fakeRes{"b", []string{"a"}}}); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle: err = %v", err)
	}
}

// debianNode is a minimal Debian facts node.
func debianNode() *facts.Node {
	return &facts.Node{OS: facts.OS{ID: "ubuntu", IDLike: []string{"debian"}, VersionID: "22.04"}, Packages: facts.Packages{Manager: facts.ManagerDpkg, Installed: map[string]facts.Package{}}}
}

// TestHostileVersionIsRefused builds a driver resource from a version that
// bypassed spec validation: the resource refuses to build a command.
func TestHostileVersionIsRefused(t *testing.T) {
	r := &pkgResource{base: base{name: DriverPackage}, family: FamilyDebian, set: driverSet(testKB, FamilyDebian, "proprietary", "550.1; rm -rf /")}
	_, err := r.Diff(debianNode())
	var unsafe *ErrUnsafeValue
	if !errors.As(err, &unsafe) || unsafe.Value != "550.1; rm -rf /" {
		t.Fatalf("Diff = %v, want ErrUnsafeValue for the version", err)
	}
	// The spec refuses it first, at load time.
	_, diags := spec.LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte(`node "n" {
  hosts = ["sim://x"]
  driver { version = "550.1; rm -rf /" }
}
`)}, spec.LoadOptions{})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "is not a version") {
		t.Errorf("spec accepted a hostile version: %v", diags)
	}
}

// TestQuotingHoldsWithoutValidation builds every kind of command step from
// hostile values with the pattern checks skipped, runs the scripts with
// recording stand-ins on PATH, and checks that each value reached the tool
// as one argument and that nothing it smuggled in ran.
func TestQuotingHoldsWithoutValidation(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	argv := filepath.Join(dir, "argv")
	for _, tool := range []string{"apt-get", "apt-cache", "apt-mark", "dnf", "systemctl", "modprobe", "mount", "sysctl", "grubby"} {
		// Each stand-in writes its arguments one per line, NUL-free.
		script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >>" + argv + "\n"
		if err := os.WriteFile(filepath.Join(bin, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pwned := filepath.Join(dir, "PWNED")
	hostile := "550.1; touch " + pwned + "; $(touch " + pwned + ") `touch " + pwned + "` ' \" \\"
	steps := map[string]Step{}
	// Package steps, apt and dnf, straight from the builders.
	deb := &pkgResource{base: base{name: DriverPackage}, family: FamilyDebian, set: pkgSet{names: []string{"cuda-drivers-550"}, pins: map[string]string{"cuda-drivers-550": hostile}}}
	steps["apt install"] = deb.installStep()
	steps["apt hold"] = deb.holdStep([]string{hostile})
	rpm := &pkgResource{base: base{name: DriverPackage}, family: FamilyRHEL, set: pkgSet{names: []string{"nvidia-open"}, pins: map[string]string{"nvidia-open": hostile}}}
	steps["dnf install"] = rpm.installStep()
	steps["dnf lock"] = rpm.holdStep([]string{hostile})
	steps["service"] = systemdUnitStep("", unitEnableNow, hostile)
	steps["modprobe"] = scriptStep("", moduleLoadScript, hostile)
	steps["remount"] = scriptStep("", shmRemountScript, hostile)
	steps["sysctl"] = scriptStep("", sysctlApplyScript, hostile, "always")
	// The effect a file's change is put into effect with, run as a step.
	steps["grubby"] = effectStep("", grubbyArgs("", hostile))
	for name, st := range steps {
		t.Run(name, func(t *testing.T) {
			os.Remove(argv)
			cmd := exec.Command("/bin/sh", "-c", st.Script)
			cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "GPUFORM_ROOT=" + dir}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("script failed: %v\n%s\n%s", err, out, st.Script)
			}
			if _, err := os.Stat(pwned); err == nil {
				t.Fatalf("the hostile value ran a command:\n%s", st.Script)
			}
			b, _ := os.ReadFile(argv)
			if !strings.Contains("\n"+string(b), "\n"+hostile+"\n") && !strings.Contains(string(b), "="+hostile+"\n") && !strings.Contains(string(b), "-"+hostile+"\n") && !strings.Contains(string(b), "remount,size="+hostile+"\n") && !strings.Contains(string(b), "--args="+hostile+"\n") {
				t.Errorf("the value did not arrive as one argument; the tool saw:\n%s", b)
			}
		})
	}
	// File writes never put content in the script: it travels on stdin.
	st, err := fileWrite{path: "/etc/nccl.conf", content: hostile + "\n"}.step()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(st.Script, "touch") {
		t.Errorf("file content leaked into the script:\n%s", st.Script)
	}
	// And a hostile path is refused outright.
	if _, err := (fileWrite{path: "/etc/x; touch " + pwned}).step(); err == nil {
		t.Error("hostile path accepted")
	}
}

// TestWriteFileStepIsAtomic runs the write step against a scratch root.
func TestWriteFileStepIsAtomic(t *testing.T) {
	root := t.TempDir()
	run := func(st Step) error {
		cmd := exec.Command("/bin/sh", "-c", st.Script)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "GPUFORM_ROOT=" + root}
		cmd.Stdin = strings.NewReader(st.Input)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return errors.New(string(out))
		}
		return nil
	}
	p := filepath.Join(root, "etc/sysctl.d/90-gpuform.conf")
	const path = "/etc/sysctl.d/90-gpuform.conf"
	st, _ := fileWrite{path: path, content: "a = 1\n"}.step()
	if err := run(st); err != nil {
		t.Fatal(err)
	}
	st, _ = fileWrite{path: path, content: "a = 2\n", cur: probeFile(t, root, path)}.step()
	if err := run(st); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "a = 2\n" {
		t.Errorf("content %q", b)
	}
	backups, _ := filepath.Glob(filepath.Join(root, "var/lib/gpuform/backup/*/etc/sysctl.d/90-gpuform.conf"))
	if len(backups) != 1 {
		t.Fatalf("backups %v", backups)
	}
	// A step whose activation fails puts the old file back (here, an
	// action apply_effect does not know: no tool is on PATH to fail).
	st, _ = fileWrite{path: path, content: "a = 3\n", cur: probeFile(t, root, path), then: effect{action: "no-such-effect"}}.step()
	if err := run(st); err == nil || !strings.Contains(err.Error(), "previous file is back") {
		t.Errorf("failed activation: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "a = 2\n" {
		t.Errorf("after a failed activation the file is %q, want the previous content", b)
	}
	// A file changed since the plan is not overwritten.
	stale := probeFile(t, root, path)
	stale.SHA256 = strings.Repeat("0", 64)
	st, _ = fileWrite{path: path, content: "a = 4\n", cur: stale}.step()
	if err := run(st); err == nil || !strings.Contains(err.Error(), "changed since") {
		t.Errorf("stale write: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the file (no temporary leftovers)", len(entries))
	}
}

func loadNode(t *testing.T, body string) *spec.Node {
	t.Helper()
	cfg, diags := spec.LoadFiles(map[string][]byte{"n.gpuform.hcl": []byte("node \"n\" {\n  hosts = [\"sim://x\"]\n" + body + "\n}\n")}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return cfg.Nodes[0]
}

func diffAll(t *testing.T, n *spec.Node, f *facts.Node) (map[string]Change, []string) {
	t.Helper()
	rs, warnings, err := Build(testKB, n, f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Change{}
	for _, r := range rs {
		c, err := r.Diff(f)
		if err != nil {
			t.Fatal(err)
		}
		out[r.Name()] = c
	}
	return out, warnings
}

func TestHugepages(t *testing.T) {
	f := debianNode()
	f.HugePages = facts.HugePages{Total: 0, PageSizeBytes: 2 << 20}
	got, _ := diffAll(t, loadNode(t, "hugepages {\n size = \"2MiB\"\n count = 1024\n}"), f)
	c := got[HugePages]
	if c.Action != Create || c.After["count"] != NumberVal(1024) || len(c.Steps) != 2 || callOf(t, c.Steps[1]).String() != "sysctl_apply.sh /etc/sysctl.d/91-gpuform-hugepages.conf always" {
		t.Errorf("2 MiB pages: %+v", c)
	}
	// Reserved and persisted: nothing to do.
	f.HugePages.Total = 1024
	f.ManagedFiles = map[string]facts.File{HugePagesFile: facts.NewFile(managedHeader + "vm.nr_hugepages = 1024\n")}
	got, _ = diffAll(t, loadNode(t, "hugepages {\n size = \"2MiB\"\n count = 1024\n}"), f)
	if c := got[HugePages]; c.Action != NoOp {
		t.Errorf("reserved pages: %+v", c)
	}
	// 1 GiB pages are boot-time kernel arguments, and need a reboot.
	got, _ = diffAll(t, loadNode(t, "kernel_args = [\"iommu=pt\"]\nhugepages {\n size = \"1GiB\"\n count = 16\n}"), debianNode())
	k := got[KernelCmdline]
	if k.After["args"] != StringVal("iommu=pt default_hugepagesz=1G hugepagesz=1G hugepages=16") || !k.RebootRequired || k.Action != Create {
		t.Errorf("1 GiB pages: %+v", k)
	}
	// A new drop-in, written and put into effect with update-grub in one
	// step.
	want := scriptCall{Name: "file_write.sh", Args: []string{GrubDropIn, GrubDropIn, "absent", "", "", "", NewFileMode, "", PendingMarker(GrubDropIn), backupDir, "update-grub"}}
	if d := cmp.Diff(want, callOf(t, k.Steps[0])); d != "" {
		t.Errorf("kernel arguments' step (-want +got):\n%s", d)
	}
}

// Docker's daemon-wide defaults have no containerd or enroot equivalent:
// such a node gets no daemon.json, and a warning instead of a silent no-op.
func TestContainerdHasNoDockerDefaults(t *testing.T) {
	for _, rt := range []string{"containerd", "enroot"} {
		got, warnings := diffAll(t, loadNode(t, "container {\n runtime = \""+rt+"\"\n default_shm_size = \"8GiB\"\n}"), debianNode())
		_, cc := got[ContainerdConfig]
		if _, ok := got[DockerDaemon]; ok || cc || len(warnings) != 1 || !strings.Contains(warnings[0], "runtime "+rt) {
			t.Errorf("%s: resources %v, warnings %q", rt, got, warnings)
		}
	}
}

func TestUnknownDistribution(t *testing.T) {
	f := debianNode()
	f.OS = facts.OS{ID: "arch", Pretty: "Arch Linux"}
	rs, _, err := Build(testKB, loadNode(t, "driver {\n version = \"550.127.08\"\n}\nsysctl = { \"vm.swappiness\" = \"1\" }"), f)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		_, err := r.Diff(f)
		if r.Name() == DriverPackage && (err == nil || !strings.Contains(err.Error(), "Arch Linux")) {
			t.Errorf("driver on Arch: %v", err)
		}
		if r.Name() == Sysctl && err != nil {
			t.Errorf("sysctl on Arch should still plan: %v", err)
		}
	}
}

// The "packages" attribute of a set shows each package with its release on
// both sides, so a plan reads what moves from which version to which.
func TestPackageSetShowsVersions(t *testing.T) {
	tk := loadNode(t, "container {\n runtime = \"docker\"\n nvidia_container_toolkit = \"1.17.8\"\n}")
	for _, tc := range []struct {
		name          string
		installed     map[string]string
		before, after string
	}{
		{"upgrade", map[string]string{"nvidia-container-toolkit": "1.14.3-1", "nvidia-container-toolkit-base": "1.14.3-1", "libnvidia-container-tools": "1.14.3-1", "libnvidia-container1": "1.14.3-1"},
			"nvidia-container-toolkit 1.14.3, nvidia-container-toolkit-base 1.14.3, libnvidia-container-tools 1.14.3, libnvidia-container1 1.14.3",
			"nvidia-container-toolkit 1.17.8, nvidia-container-toolkit-base 1.17.8, libnvidia-container-tools 1.17.8, libnvidia-container1 1.17.8"},
		{"one missing", map[string]string{"nvidia-container-toolkit": "1.17.8-1", "nvidia-container-toolkit-base": "1.17.8-1", "libnvidia-container1": "1.17.8-1"},
			"nvidia-container-toolkit 1.17.8, nvidia-container-toolkit-base 1.17.8, libnvidia-container1 1.17.8",
			"nvidia-container-toolkit 1.17.8, nvidia-container-toolkit-base 1.17.8, libnvidia-container-tools 1.17.8, libnvidia-container1 1.17.8"},
		{"none", nil, "",
			"nvidia-container-toolkit 1.17.8, nvidia-container-toolkit-base 1.17.8, libnvidia-container-tools 1.17.8, libnvidia-container1 1.17.8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := debianNode()
			for name, v := range tc.installed {
				f.Packages.Installed[name] = facts.Package{Version: v}
			}
			got, _ := diffAll(t, tk, f)
			c := got[ContainerToolkit]
			if c.Before["packages"] != StringVal(tc.before) || c.After["packages"] != StringVal(tc.after) {
				t.Errorf("packages\nbefore %q\n want  %q\nafter  %q\n want  %q", c.Before["packages"].Text, tc.before, c.After["packages"].Text, tc.after)
			}
		})
	}
}

// On the RHEL family grubby edits the boot entries directly, so arguments
// the spec no longer lists must be removed from them explicitly; a drop-in
// change alone would leave them on the kernel command line for good.
func TestGrubbyRemovesDroppedArguments(t *testing.T) {
	rhel := func() *facts.Node {
		f := debianNode()
		f.OS = facts.OS{ID: "rocky", IDLike: []string{"rhel", "centos", "fedora"}, VersionID: "9.4"}
		f.Packages.Manager = facts.ManagerRPM
		f.ManagedFiles = map[string]facts.File{GrubDropIn: facts.NewFile(managedHeader + `GRUB_CMDLINE_LINUX="$GRUB_CMDLINE_LINUX iommu=pt intel_iommu=on"` + "\n")}
		return f
	}
	for _, tc := range []struct {
		name, body string
		// want are the effects the steps run, as apply_effect's
		// arguments; desc the description of the step that runs it.
		want [][]string
		desc string
		not  []string
	}{
		{"one dropped", `kernel_args = ["iommu=pt"]`, [][]string{{"grubby", "intel_iommu=on", "iommu=pt"}},
			"write " + GrubDropIn + " and run grubby --update-kernel=ALL --remove-args=intel_iommu=on --args=iommu=pt", nil},
		{"all dropped", ``, [][]string{{"grubby", "iommu=pt intel_iommu=on", ""}},
			"run grubby --update-kernel=ALL --remove-args='iommu=pt intel_iommu=on'", []string{"--args="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := diffAll(t, loadNode(t, tc.body), rhel())
			c := got[KernelCmdline]
			// The effects the steps run to put the drop-in into effect,
			// the steps' descriptions, and every step's script and
			// arguments.
			if d := cmp.Diff(tc.want, effectsRun(t, c.Steps)); d != "" {
				t.Errorf("effects run (-want +got):\n%s", d)
			}
			var descs []string
			for _, st := range c.Steps {
				descs = append(descs, st.Description)
			}
			if !slices.Contains(descs, tc.desc) {
				t.Errorf("no step %q: %q", tc.desc, descs)
			}
			all := callsOf(t, c.Steps) + strings.Join(descs, "\n")
			for _, w := range tc.not {
				if strings.Contains(all, w) {
					t.Errorf("%q in the steps:\n%s", w, all)
				}
			}
		})
	}
}

// /etc/nccl.conf is read line by line by every NCCL job: a value that got
// past the spec with a newline in it must not add a line of its own.
func TestNCCLConfRefusesHostileValues(t *testing.T) {
	for _, tc := range []struct{ name, hca, ifname string }{
		{"hca with newline", "mlx5_0\nNCCL_NET_PLUGIN=/tmp/evil.so", ""},
		{"ifname with newline", "mlx5_0", "eth0\nNCCL_NET_PLUGIN=/tmp/evil.so"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := loadNode(t, "affinity {\n nccl_env = true\n nccl_ib_hca = [\"mlx5_0\"]\n nccl_socket_ifname = \"eth0\"\n}")
			n.Affinity.NCCLIBHCA[0].V = tc.hca
			if tc.ifname != "" {
				n.Affinity.NCCLSocketIfname.V = tc.ifname
			}
			_, _, err := Build(testKB, n, debianNode())
			var unsafe *ErrUnsafeValue
			if !errors.As(err, &unsafe) {
				t.Errorf("Build: %v, want ErrUnsafeValue", err)
			}
		})
	}
}
