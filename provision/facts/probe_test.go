package facts_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/transport"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current probe results")

// normalise removes what differs between runs of the same root: the
// temporary directory it was materialised in and the transport's host name.
func normalise(n *facts.Node, name string) *facts.Node {
	c := *n
	c.Host = ""
	c.Root = "/sim/" + name
	// Whoever runs the tests owns the materialised files.
	c.ConfigFiles = map[string]facts.ConfigFile{}
	for k, f := range n.ConfigFiles {
		f.UID, f.GID = "", ""
		c.ConfigFiles[k] = f
	}
	return &c
}

func marshal(t *testing.T, n *facts.Node) []byte {
	t.Helper()
	b, err := json.MarshalIndent(n, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestProbeSimRoots runs the real probe script over every simulated root,
// once through the sim transport and once through the local transport with
// a root prefix (what `gpuform facts --root` does), and compares the parsed
// facts with the golden JSON.
func TestProbeSimRoots(t *testing.T) {
	state := t.TempDir()
	for _, name := range sim.Names() {
		t.Run(name, func(t *testing.T) {
			root, err := sim.Materialize(name, state)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			viaSim, err := facts.Probe(ctx, sim.New("sim://"+name, root), facts.Options{Reads: resource.Reads()})
			if err != nil {
				t.Fatal(err)
			}
			if viaSim.Host != "sim://"+name {
				t.Errorf("Host = %q, want the transport's host", viaSim.Host)
			}
			// rpm roots need the rpm stand-in on PATH even through the local
			// transport, since this machine's rpm (if any) cannot read them.
			lt := local.New("localhost", local.WithEnv(map[string]string{
				"PATH": filepath.Join(root, sim.BinDir) + ":" + os.Getenv("PATH"),
			}))
			viaLocal, err := facts.Probe(ctx, lt, facts.Options{Reads: resource.Reads(), Root: root})
			if err != nil {
				t.Fatal(err)
			}
			got := marshal(t, normalise(viaSim, name))
			if diff := cmp.Diff(string(got), string(marshal(t, normalise(viaLocal, name)))); diff != "" {
				t.Errorf("sim and local transports disagree (-sim +local):\n%s", diff)
			}
			golden := filepath.Join("testdata", "golden", name+".json")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("facts differ from %s (-want +got):\n%s", golden, diff)
			}
			if len(viaSim.Warnings) > 0 {
				t.Errorf("unexpected warnings: %q", viaSim.Warnings)
			}
		})
	}
}

// TestProbeLiveRoot runs the probe on the machine running the tests: the
// script must work on a real Linux root, whatever it holds.
func TestProbeLiveRoot(t *testing.T) {
	if _, err := os.Stat("/proc/sys/kernel/osrelease"); err != nil {
		t.Skip("not Linux")
	}
	n, err := facts.Probe(context.Background(), local.New("localhost"), facts.Options{Reads: resource.Reads()})
	if err != nil {
		t.Fatal(err)
	}
	if n.Kernel.Release == "" || n.Arch == "" || n.MemoryBytes == 0 || n.CPU.LogicalCPUs == 0 {
		t.Errorf("live facts incomplete: kernel %q arch %q memory %d cpus %d", n.Kernel.Release, n.Arch, n.MemoryBytes, n.CPU.LogicalCPUs)
	}
	if n.Root != "/" {
		t.Errorf("Root = %q, want /", n.Root)
	}
	// Read from the Uid line of /proc/self/status, not by id -u.
	if n.EUID == nil || *n.EUID != os.Geteuid() {
		t.Errorf("EUID = %v, want %d", n.EUID, os.Geteuid())
	}
	// Where systemd does not run, is-active is not asked and every unit
	// reads unknown, as systemctl's refusal read.
	if _, err := os.Stat("/run/systemd/system"); os.IsNotExist(err) && len(n.Units) > 0 {
		for u, st := range n.Units {
			if st.Active != "unknown" {
				t.Errorf("unit %s: active %q without a running systemd, want unknown", u, st.Active)
			}
		}
	}
}

// TestProbeLiveKernelValues: on a live root the probe reads the kernel's
// values whole under every shell. dash's and busybox's read take a byte a
// syscall, and an integer sysctl returns nothing at an offset past 0, so
// vm.swappiness read "6" for 60 and fs.file-max its first digit; a NUMA
// node's cpulist read empty. Each is compared with the file read here.
func TestProbeLiveKernelValues(t *testing.T) {
	if _, err := os.Stat("/proc/sys/vm/swappiness"); err != nil {
		sshtest.Missing(t, "no /proc/sys/vm/swappiness: the live kernel values need Linux")
	}
	script := writeProbeFile(t, nil)
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(string(b)), " ")
	}
	sysctls := map[string]string{}
	for _, k := range []string{"vm.swappiness", "fs.file-max", "kernel.pid_max", "net.core.rmem_max", "net.ipv4.tcp_rmem"} {
		sysctls[k] = read("/proc/sys/" + strings.ReplaceAll(k, ".", "/"))
	}
	cpulist := ""
	if _, err := os.Stat("/sys/devices/system/node/node0/cpulist"); err == nil {
		cpulist = read("/sys/devices/system/node/node0/cpulist")
	}
	for name, argv := range map[string][]string{"dash": {"dash"}, "bash-posix": {"bash", "--posix"}, "busybox-ash": {"busybox", "sh"}} {
		t.Run(name, func(t *testing.T) {
			if _, err := exec.LookPath(argv[0]); err != nil {
				sshtest.Missing(t, argv[0]+" is not installed")
			}
			n, _ := runProbeFile(t, script, argv, "GPUFORM_PROBE_NONCE=kv1")
			for k, want := range sysctls {
				if got := n.Sysctls[k]; got != want {
					t.Errorf("sysctl %s = %q, want %q", k, got, want)
				}
			}
			if cpulist != "" && (len(n.NUMA) == 0 || n.NUMA[0].CPUs != cpulist) {
				t.Errorf("NUMA nodes %+v, want node 0 with CPUs %q", n.NUMA, cpulist)
			}
		})
	}
}

// TestProbeLiveEUID: the effective uid is the probe's own, not the
// invoking user's: run as nobody (from root, setpriv drops to 65534), the
// probe reads 65534.
func TestProbeLiveEUID(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		sshtest.Missing(t, "no /proc/self/status: the live euid needs Linux")
	}
	if os.Geteuid() != 0 {
		sshtest.Missing(t, "needs root to run the probe as another user")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		sshtest.Missing(t, "setpriv (util-linux) is not installed")
	}
	script := writeProbeFile(t, nil)
	// The script's directory and the test's one above it are made
	// searchable for nobody; the temp dir's parents must be already.
	for _, d := range []string{filepath.Dir(script), filepath.Dir(filepath.Dir(script))} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for d := filepath.Dir(filepath.Dir(filepath.Dir(script))); d != "/"; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm()&0o001 == 0 {
			sshtest.Missing(t, d+" is not searchable by nobody")
		}
	}
	n, _ := runProbeFile(t, script, []string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh"}, "GPUFORM_PROBE_NONCE=eu1")
	if n.EUID == nil || *n.EUID != 65534 {
		t.Errorf("EUID = %v, want 65534", n.EUID)
	}
}

// TestProbeWithoutAwk: a node without awk still gets the files grep_later
// queued, each by its own grep, and the effective uid by id -u. The
// queued reads are checked on a simulated node against the run with awk
// (the probe's other uses of awk differ without it), the uid live.
func TestProbeWithoutAwk(t *testing.T) {
	// A PATH of everything this machine's /usr/bin and /bin have but awk.
	bin := t.TempDir()
	for _, dir := range []string{"/usr/bin", "/bin"} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if strings.Contains(name, "awk") {
				continue
			}
			if err := os.Symlink(filepath.Join(dir, name), filepath.Join(bin, name)); err != nil && !os.IsExist(err) {
				t.Fatal(err)
			}
		}
	}
	script := writeProbeFile(t, nil)
	root, err := sim.Materialize("hgx-h100-converged", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, env ...string) *facts.Node {
		t.Helper()
		n, _ := runProbeFile(t, script, []string{"/bin/sh"}, append([]string{"GPUFORM_PROBE_NONCE=na1"}, env...)...)
		return n
	}
	simBin := filepath.Join(root, sim.BinDir)
	want := run(t, "GPUFORM_ROOT="+root, "PATH="+simBin+":"+os.Getenv("PATH"))
	got := run(t, "GPUFORM_ROOT="+root, "PATH="+simBin+":"+bin)
	type queued struct {
		Packages    facts.Packages
		MemoryBytes uint64
		HugePages   facts.HugePages
		Shm         facts.Shm
		NUMA        []facts.NUMANode
		CPU         facts.CPU
	}
	w := queued{want.Packages, want.MemoryBytes, want.HugePages, want.Shm, want.NUMA, want.CPU}
	g := queued{got.Packages, got.MemoryBytes, got.HugePages, got.Shm, got.NUMA, got.CPU}
	if len(w.Packages.Installed) == 0 || w.MemoryBytes == 0 || len(w.NUMA) == 0 || w.CPU.Sockets < 2 || w.CPU.Model == "" {
		t.Fatalf("the simulated node reads no packages, memory, NUMA nodes or two sockets: %+v", w)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("the queued reads without awk differ (-with +without):\n%s", diff)
	}
	if _, err := os.Stat("/proc/self/status"); err == nil {
		live := run(t, "PATH="+bin)
		if live.EUID == nil || *live.EUID != os.Geteuid() {
			t.Errorf("without awk, EUID = %v, want %d", live.EUID, os.Geteuid())
		}
	}
}

// fakeTransport answers every command with a fixed result.
type fakeTransport struct {
	res  transport.Result
	err  error
	seen []transport.Command
}

func (f *fakeTransport) Host() string { return "node1" }
func (f *fakeTransport) Close() error { return nil }
func (f *fakeTransport) Run(_ context.Context, c transport.Command) (transport.Result, error) {
	f.seen = append(f.seen, c)
	return f.res, f.err
}

// TestProbeErrors checks that every way a probe can fail comes back as a
// HostError for that host, with a message that says what happened.
func TestProbeErrors(t *testing.T) {
	tests := map[string]struct {
		res  transport.Result
		err  error
		want string
	}{
		"transport failure": {err: os.ErrDeadlineExceeded, want: "node1: probe: i/o timeout"},
		"non-zero exit":     {res: transport.Result{ExitCode: 127, Stderr: []byte("sh: not found\n")}, want: "probe exited 127: sh: not found"},
		"garbage output":    {res: transport.Result{Stdout: []byte("Welcome to node1\nlast login ...\n")}, want: "not gpuform probe output"},
		// A login shell that prints to stderr is worth showing next to the parse error.
		"truncated with stderr": {res: transport.Result{Stdout: []byte("@@gpuform-probe v1 begin abc\n@@abc root /\n"), Stderr: []byte("Connection reset\n")}, want: "truncated after 42 bytes: no end marker (stderr: Connection reset)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ft := &fakeTransport{res: tc.res, err: tc.err}
			_, err := facts.Probe(context.Background(), ft, facts.Options{Reads: resource.Reads(), Root: "/mnt/img", Become: true})
			var he *transport.HostError
			if !errorsAs(err, &he) || he.Host != "node1" {
				t.Fatalf("error %v is not a HostError for node1", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
			if len(ft.seen) != 1 {
				t.Fatalf("probe ran %d commands, want exactly 1", len(ft.seen))
			}
			c := ft.seen[0]
			if !c.Become || c.Env["GPUFORM_ROOT"] != "/mnt/img" || c.Env["GPUFORM_PROBE_NONCE"] == "" || c.Script != facts.Script(resource.Reads()) {
				t.Errorf("probe command = become %v env %v, want become, root and nonce", c.Become, c.Env)
			}
		})
	}
}

func errorsAs(err error, target **transport.HostError) bool {
	he, ok := err.(*transport.HostError)
	if ok {
		*target = he
	}
	return ok
}

// TestProbeShells runs the probe under every POSIX shell found on this
// machine (nodes run dash, bash, or busybox ash) and checks each reads the
// same facts as the golden file. scripts/test.sh installs busybox-static,
// whose sh prefers its own applets (rpm among them) to $PATH; a shell that
// is not installed fails the test in CI and skips it elsewhere.
func TestProbeShells(t *testing.T) {
	// Each shell's command line and the Debian package that has it.
	shells := map[string]struct {
		argv []string
		pkg  string
	}{
		"dash":        {[]string{"dash"}, "dash"},
		"bash-posix":  {[]string{"bash", "--posix"}, "bash"},
		"busybox-ash": {[]string{"busybox", "sh"}, "busybox-static"},
	}
	script := writeProbeFile(t, nil)
	state := t.TempDir()
	for _, profile := range []string{"hgx-h100-converged", "l40s-rocky9"} {
		root, err := sim.Materialize(profile, state)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("testdata", "golden", profile+".json"))
		if err != nil {
			t.Fatal(err)
		}
		for name, sh := range shells {
			t.Run(profile+"/"+name, func(t *testing.T) {
				argv := sh.argv
				if _, err := exec.LookPath(argv[0]); err != nil {
					sshtest.Missing(t, argv[0]+" is not installed (apt-get install "+sh.pkg+")")
				}
				n, _ := runProbeFile(t, script, argv, "GPUFORM_ROOT="+root, "GPUFORM_PROBE_NONCE=sh1",
					"PATH="+filepath.Join(root, sim.BinDir)+":"+os.Getenv("PATH"))
				if diff := cmp.Diff(string(want), string(marshal(t, normalise(n, profile)))); diff != "" {
					t.Errorf("facts under %s differ from golden (-want +got):\n%s", name, diff)
				}
			})
		}
	}
}

// TestProbeAbsoluteSymlinks: under a root prefix, an absolute symlink in the
// image must resolve inside the image, never to the machine running gpuform.
func TestProbeAbsoluteSymlinks(t *testing.T) {
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
	write("usr/lib/os-release", "ID=imageos\nVERSION_ID=\"1\"\n")
	write("etc/hostname", "ro image=1\n")
	write("proc/sys/kernel/arch", "riscv64\n")
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	// /etc/hostname exists on this machine too: following the link outside
	// the image would read the wrong file.
	for link, target := range map[string]string{"etc/os-release": "/usr/lib/os-release", "proc/cmdline": "/etc/hostname"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := facts.Probe(context.Background(), local.New("image"), facts.Options{Reads: resource.Reads(), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if n.OS.ID != "imageos" || n.Arch != "riscv64" || strings.Join(n.Kernel.Cmdline, " ") != "ro image=1" {
		t.Errorf("read os %q arch %q cmdline %q: want the image's, not this machine's", n.OS.ID, n.Arch, n.Kernel.Cmdline)
	}
	if n.Driver != nil || len(n.PCI) != 0 || n.MemoryBytes != 0 {
		t.Errorf("an empty image has no driver, devices or memory: %+v %d %d", n.Driver, len(n.PCI), n.MemoryBytes)
	}
}

// TestProbeUnreadableFile runs the probe as a user who cannot read
// /etc/docker/daemon.json (mode 0600): the probe must say the file is
// unreadable, not missing. Root reads everything, so under root the probe
// is run through setpriv as nobody; root without setpriv fails in CI and
// skips elsewhere.
func TestProbeUnreadableFile(t *testing.T) {
	root := t.TempDir()
	// t.TempDir and its parent are 0700; open them for nobody.
	for _, d := range []string{root, filepath.Dir(root)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(root, "etc", "docker")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(root, "etc"), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "daemon.json"), []byte(`{"data-root": "/data/docker"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "probe.sh")
	if err := os.WriteFile(script, []byte(facts.Script(resource.Reads())), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := []string{"/bin/sh"}
	if os.Geteuid() == 0 {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			sshtest.Missing(t, "running as root without setpriv (util-linux): cannot drop privileges")
		}
		// The temp dir's parents must be searchable for nobody.
		for d := filepath.Dir(root); d != "/"; d = filepath.Dir(d) {
			if st, err := os.Stat(d); err != nil || st.Mode().Perm()&0o001 == 0 {
				t.Skipf("%s is not searchable by nobody", d)
			}
		}
		argv = append([]string{setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"}, argv...)
	}
	n, _ := runProbeFile(t, script, argv, "GPUFORM_ROOT="+root, "GPUFORM_PROBE_NONCE=un1")
	if !n.Docker.Present || n.Docker.Error == "" {
		t.Errorf("docker %+v: an unreadable daemon.json read as absent", n.Docker)
	}
}

// TestProbeNICUpstreamPort reads an RDMA NIC's upstream port maxima: the
// port is the parent of the NIC's directory in /sys/devices, and a Gen5
// x16 NIC in a Gen4 x16 slot must carry the slot's Gen4 so nic.pcie_link
// judges it against what the link can reach. A GPU's port is not read.
func TestProbeNICUpstreamPort(t *testing.T) {
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
	link := func(p, target string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	write("proc/sys/kernel/arch", "x86_64\n")
	port := "sys/devices/pci0000:15/0000:15:01.0"
	write(port+"/max_link_speed", "16.0 GT/s PCIe\n")
	write(port+"/max_link_width", "16\n")
	dev := port + "/0000:16:00.0"
	for k, v := range map[string]string{"class": "0x020700", "vendor": "0x15b3", "device": "0x1021", "numa_node": "0",
		"current_link_speed": "16.0 GT/s PCIe", "max_link_speed": "32.0 GT/s PCIe", "current_link_width": "16", "max_link_width": "16"} {
		write(dev+"/"+k, v+"\n")
	}
	if err := os.MkdirAll(filepath.Join(root, dev, "infiniband", "mlx5_0"), 0o755); err != nil {
		t.Fatal(err)
	}
	gpu := port + "/0000:17:00.0"
	for k, v := range map[string]string{"class": "0x030200", "vendor": "0x10de", "device": "0x2330", "numa_node": "0",
		"current_link_speed": "32.0 GT/s PCIe", "max_link_speed": "32.0 GT/s PCIe", "current_link_width": "16", "max_link_width": "16"} {
		write(gpu+"/"+k, v+"\n")
	}
	link("sys/bus/pci/devices/0000:16:00.0", "../../../devices/pci0000:15/0000:15:01.0/0000:16:00.0")
	link("sys/bus/pci/devices/0000:17:00.0", "../../../devices/pci0000:15/0000:15:01.0/0000:17:00.0")
	n, err := facts.Probe(context.Background(), local.New("nic"), facts.Options{Reads: resource.Reads(), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]any{}
	for _, d := range n.PCI {
		got[d.Address] = [2]any{d.PortMaxLinkSpeed, d.PortMaxLinkWidth}
	}
	want := map[string][2]any{"0000:16:00.0": {"16.0 GT/s PCIe", 16}, "0000:17:00.0": {"", 0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("upstream port maxima (-want +got):\n%s", diff)
	}
}

// TestProbeLinkListingCannotBeForged: under a root prefix the probe reads
// a directory's device links with one ls (list_links); an entry whose name
// holds a newline prints a second line that reads as another entry's link.
// Such a listing must not be used: 0000:17:00.0 is the GPU it links to,
// not the NIC the forged line names.
func TestProbeLinkListingCannotBeForged(t *testing.T) {
	t.Parallel()
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
	write("proc/sys/kernel/arch", "x86_64\n")
	nic := "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0"
	gpu := "sys/devices/pci0000:15/0000:15:01.0/0000:17:00.0"
	for dir, class := range map[string]string{nic: "0x020700", gpu: "0x030200"} {
		write(dir+"/class", class+"\n")
		write(dir+"/vendor", map[string]string{nic: "0x15b3", gpu: "0x10de"}[dir]+"\n")
	}
	for _, d := range []string{nic, gpu} {
		p := filepath.Join(root, "sys/bus/pci/devices", filepath.Base(d))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../../../devices/pci0000:15/0000:15:01.0/"+filepath.Base(d), p); err != nil {
			t.Fatal(err)
		}
	}
	// Sorted between the two links, a regular file whose name's second
	// line is what ls -ln prints for a link 0000:17:00.0 to the NIC's
	// link (a name holds no slash, a link's target may be a sibling).
	write("sys/bus/pci/devices/0000:16:00.0\nlrwxrwxrwx 1 0 0 0 Jan  1 00:00 0000:17:00.0 -> 0000:16:00.0", "")
	n, err := facts.Probe(context.Background(), local.New("forged"), facts.Options{Reads: resource.Reads(), Root: root})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range n.PCI {
		got[d.Address] = d.Class + " " + d.Vendor
	}
	want := map[string]string{"0000:16:00.0": "0x020700 0x15b3", "0000:17:00.0": "0x030200 0x10de"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PCI devices (-want +got):\n%s", diff)
	}
}

// Under a root prefix the devices' driver links are read with one ls -lnd
// (link_table in probe.sh); a link's target may hold anything, so a
// target that reads like the line of another device's driver link must
// not stand for it, and one holding a newline must not shift the lines.
func TestProbeDriverLinkTableCannotBeForged(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "probe.sh")
	if err := os.WriteFile(script, []byte(facts.Script(resource.Reads())), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		// shell runs the script; none: facts.Probe over the local transport.
		shell []string
		// nic is the NIC's driver link's target, given the GPU's link's physical path.
		nic func(gpuLink string) string
		gpu string
		// gpuSuffix ends the name of the GPU's directory under /sys/devices.
		gpuSuffix string
	}{{
		name: "forged line",
		nic: func(gpuLink string) string {
			return "x " + gpuLink + " -> ../../../../bus/pci/drivers/evil"
		},
		gpu: "../../../../bus/pci/drivers/nvidia",
	}, {
		// busybox ls prints a control byte of a target as "?": the
		// table's line is one line, but not the target.
		name:  "control byte under busybox",
		shell: []string{"busybox", "sh"},
		nic:   func(string) string { return "../../../../bus/pci/drivers/mlx5_core" },
		gpu:   "../../../../bus/pci/drivers/nv\tidia",
	}, {
		// The same for the listing of /sys/bus/pci/devices (list_links):
		// the GPU's directory there ends in a tab.
		name:      "control byte in a device link under busybox",
		shell:     []string{"busybox", "sh"},
		nic:       func(string) string { return "../../../../bus/pci/drivers/mlx5_core" },
		gpu:       "../../../../bus/pci/drivers/nvidia",
		gpuSuffix: "\t",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if len(tc.shell) > 0 {
				if _, err := exec.LookPath(tc.shell[0]); err != nil {
					sshtest.Missing(t, tc.shell[0]+" is not installed (apt-get install busybox-static)")
				}
			}
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			write := func(p, s string) {
				t.Helper()
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			link := func(target, p string) {
				t.Helper()
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
					t.Fatal(err)
				}
			}
			write("proc/sys/kernel/arch", "x86_64\n")
			// The NIC's driver link sorts before the GPU's.
			nic := "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0"
			gpu := "sys/devices/pci0000:15/0000:15:01.0/0000:17:00.0" + tc.gpuSuffix
			for dir, class := range map[string]string{nic: "0x020700", gpu: "0x030200"} {
				write(dir+"/class", class+"\n")
				write(dir+"/vendor", map[string]string{nic: "0x15b3", gpu: "0x10de"}[dir]+"\n")
				link("../../../devices/pci0000:15/0000:15:01.0/"+filepath.Base(dir), "sys/bus/pci/devices/"+strings.TrimSuffix(filepath.Base(dir), tc.gpuSuffix))
			}
			for _, d := range []string{"nvidia", "mlx5_core", "evil"} {
				if err := os.MkdirAll(filepath.Join(root, "sys/bus/pci/drivers", d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			link(tc.gpu, gpu+"/driver")
			link(tc.nic(root+"/"+gpu+"/driver"), nic+"/driver")
			var n *facts.Node
			if len(tc.shell) == 0 {
				n, err = facts.Probe(context.Background(), local.New("forged"), facts.Options{Reads: resource.Reads(), Root: root})
			} else {
				cmd := exec.Command(tc.shell[0], append(tc.shell[1:], script)...)
				cmd.Env = append(os.Environ(), "GPUFORM_ROOT="+root, "GPUFORM_PROBE_NONCE=sh1")
				var out []byte
				if out, err = cmd.Output(); err == nil {
					n, err = facts.Parse(out)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, d := range n.PCI {
				got[d.Address] = d.Driver
			}
			if _, ok := got["0000:16:00.0"]; !ok {
				t.Errorf("the NIC 0000:16:00.0 is not in the facts: %v", got)
			}
			if want := filepath.Base(tc.gpu); got["0000:17:00.0"] != want {
				t.Errorf("the GPU's driver is %q, want %q (its link's target); all: %v", got["0000:17:00.0"], want, got)
			}
		})
	}
}

// Under a host root (Options.HostRoot: the node's / mounted into a pod)
// the probe reads the root's files but runs only this machine's own
// tools, never a binary under the root; under a simulated root it is
// the other way round (only the root's stand-ins). Each tool here leaves
// a mark of which one ran.
func TestProbeHostRootRunsNoBinaryOfTheRoot(t *testing.T) {
	t.Parallel()
	root, own, marks := t.TempDir(), t.TempDir(), t.TempDir()
	tool := func(dir, mark string) {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		script := "#!/bin/sh\n: >\"$GPUFORM_TEST_MARKS/" + mark + "\"\necho ran\n"
		if err := os.WriteFile(filepath.Join(dir, "nvidia-imex-ctl"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tool(filepath.Join(root, "usr/local/bin"), "root")
	tool(own, "own")
	for _, c := range []struct {
		name     string
		hostRoot bool
		path     string
		want     string // the mark left, "" for none
	}{
		{"host root, the root's tool first on PATH", true, filepath.Join(root, "usr/local/bin") + ":" + own + ":/usr/bin:/bin", ""},
		{"host root, this machine's tool", true, own + ":/usr/bin:/bin", "own"},
		{"simulated root, its stand-in", false, filepath.Join(root, "usr/local/bin") + ":" + own + ":/usr/bin:/bin", "root"},
		{"simulated root, this machine's tool", false, own + ":/usr/bin:/bin", ""},
	} {
		for _, m := range []string{"root", "own"} {
			os.Remove(filepath.Join(marks, m))
		}
		lt := local.New("node", local.WithEnv(map[string]string{"PATH": c.path, "GPUFORM_TEST_MARKS": marks}))
		if _, err := facts.Probe(context.Background(), lt, facts.Options{Reads: resource.Reads(), Root: root, HostRoot: c.hostRoot, IMEXStatus: true}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, m := range []string{"root", "own"} {
			_, err := os.Stat(filepath.Join(marks, m))
			if ran := err == nil; ran != (m == c.want) {
				t.Errorf("%s: the %s tool ran: %v, want %v", c.name, m, ran, m == c.want)
			}
		}
	}
}

// writeProbeFile writes the probe of r (the resources' reads when nil) to
// a file of its own temp dir, for a shell to run.
func writeProbeFile(t *testing.T, r *facts.Reads) string {
	t.Helper()
	reads := resource.Reads()
	if r != nil {
		reads = *r
	}
	script := filepath.Join(t.TempDir(), "probe.sh")
	if err := os.WriteFile(script, []byte(facts.Script(reads)), 0o644); err != nil {
		t.Fatal(err)
	}
	return script
}

// runProbeFile runs the probe file under argv (a shell and its flags),
// with env added to this process's, and parses what it printed.
func runProbeFile(t *testing.T, script string, argv []string, env ...string) (*facts.Node, []byte) {
	t.Helper()
	return runProbeFileIn(t, script, argv, append(os.Environ(), env...))
}

// runProbeFileIn is runProbeFile with env as the whole environment.
func runProbeFileIn(t *testing.T, script string, argv, env []string) (*facts.Node, []byte) {
	t.Helper()
	cmd := exec.Command(argv[0], append(argv[1:], script)...)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	n, err := facts.Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	return n, out
}
