package facts

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// probeOutput builds probe output with nonce "n1" from records, each a
// marker line's tail ("file /x") optionally followed by a body.
func probeOutput(records ...string) string {
	var b strings.Builder
	b.WriteString("@@gpuform-probe v1 begin n1\n@@n1 root /\n")
	for _, r := range records {
		b.WriteString(r)
	}
	return b.String()
}

func file(path, body string) string {
	return "@@n1 file " + path + "\n" + body + "\n@@n1 eof\n"
}

func missing(path string) string { return "@@n1 missing " + path + "\n" }

// minimal holds every record Parse requires.
func minimal() []string {
	// os-release and arch are present so that only the record under test
	// produces warnings.
	r := []string{file("/etc/os-release", "ID=ubuntu\n"), file("/proc/sys/kernel/arch", "x86_64\n")}
	for _, p := range requiredPaths {
		r = append(r, missing(p))
	}
	return r
}

const end = "@@n1 end\n"

func TestParseErrors(t *testing.T) {
	valid := probeOutput(append(minimal(), end)...)
	tests := map[string]struct {
		out  string
		want error
		msg  string
	}{
		"empty":        {out: "", want: ErrNotProbeOutput, msg: "starts with nothing"},
		"garbage":      {out: "Permission denied (publickey).\n", want: ErrNotProbeOutput},
		"binary noise": {out: "\x00\xff\xfe@@gpuform\x1b[0m\n\x00", want: ErrNotProbeOutput},
		// A future probe format must be refused, not half read.
		"other version":    {out: strings.Replace(valid, " v1 ", " v2 ", 1), want: ErrNotProbeOutput, msg: `format "v2"`},
		"bad nonce":        {out: strings.Replace(valid, "begin n1", "begin n-1", 1), want: ErrNotProbeOutput},
		"header only":      {out: "@@gpuform-probe v1 begin n1\n", want: ErrTruncated, msg: "no end marker"},
		"no end marker":    {out: strings.TrimSuffix(valid, end), want: ErrTruncated},
		"cut inside file":  {out: probeOutput(file("/proc/cmdline", "ro quiet")[:30]), want: ErrTruncated, msg: "file /proc/cmdline has no eof marker"},
		"cut in link":      {out: probeOutput("@@n1 link /usr/local/cuda"), want: ErrTruncated, msg: "link /usr/local/cuda has no target"},
		"text between":     {out: probeOutput(missing("/x"), "stray text\n", end), want: ErrGarbled, msg: `got "stray text"`},
		"other nonce":      {out: probeOutput("@@n2 missing /x\n", end), want: ErrGarbled},
		"unknown record":   {out: probeOutput("@@n1 frobnicate /x\n", end), want: ErrGarbled, msg: "unknown record"},
		"bad exit status":  {out: probeOutput("@@n1 cmd rpm x\n\n@@n1 eof\n", end), want: ErrGarbled, msg: "bad exit status"},
		"missing sections": {out: probeOutput(missing("/etc/os-release"), end), want: ErrGarbled, msg: "no record for /proc/sys/kernel/osrelease"},
		// "@@n1 next\n" is 40 40 6e 31 20 6e 65 78 74 0a.
		"pair without separator":  {out: probeOutput("@@n1 pair /a /b\n 61 62\n@@n1 eof\n", end), want: ErrGarbled, msg: "not cut once"},
		"pair, two separators":    {out: probeOutput("@@n1 pair /a /b\n 40 40 6e 31 20 6e 65 78 74 0a 40 40 6e 31 20 6e 65 78 74 0a\n@@n1 eof\n", end), want: ErrGarbled, msg: "not cut once"},
		"pair, other nonce's cut": {out: probeOutput("@@n1 pair /a /b\n 40 40 6e 32 20 6e 65 78 74 0a\n@@n1 eof\n", end), want: ErrGarbled, msg: "not cut once"},
		"pair of one path":        {out: probeOutput("@@n1 pair /a\n 40 40 6e 31 20 6e 65 78 74 0a\n@@n1 eof\n", end), want: ErrGarbled, msg: "names no two paths"},
		"pair, bad hex":           {out: probeOutput("@@n1 pair /a /b\n 4g\n@@n1 eof\n", end), want: ErrGarbled, msg: "not a hex byte"},
		"pair cut short":          {out: probeOutput("@@n1 pair /a /b\n 40 40"), want: ErrTruncated, msg: "pair /a /b has no eof marker"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			n, err := Parse([]byte(tc.out))
			if !errors.Is(err, tc.want) {
				t.Fatalf("Parse error = %v, want %v", err, tc.want)
			}
			if n != nil {
				t.Errorf("Parse returned a node with an error")
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
		})
	}
	// What a login shell's rc files print comes first, sometimes without
	// its newline (printf "Welcome"): the header then starts mid-line.
	for name, banner := range map[string]string{"banner": "Last login: yesterday\n", "banner without newline": "Welcome to node1 "} {
		t.Run("valid minimal after "+name, func(t *testing.T) {
			n, err := Parse([]byte(banner + valid))
			if err != nil {
				t.Fatalf("minimal output after a login banner: %v", err)
			}
			if n.Driver != nil || len(n.PCI) != 0 || n.Root != "/" {
				t.Errorf("minimal node = %+v", n)
			}
		})
	}
}

// TestParseRecords checks the record syntax: bodies with and without a
// final newline, empty bodies, bodies that contain marker-like text.
func TestParseRecords(t *testing.T) {
	out := probeOutput(append(minimal(),
		file("/a", "no newline"),
		file("/b", "one newline\n"),
		file("/c", ""),
		file("/d", "@@n2 end\n@@gpuform-probe v1 begin n2\n@@n1 eofx"),
		"@@n1 link /usr/local/cuda\ncuda-12.4\n",
		"@@n1 cmd rpm 0\nx\t1:2-3\tx86_64\n@@n1 eof\n",
		end)...)
	raw, err := split([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"/a": "no newline", "/b": "one newline\n", "/c": "", "/d": "@@n2 end\n@@gpuform-probe v1 begin n2\n@@n1 eofx"}
	for p, w := range want {
		if raw.files[p] != w {
			t.Errorf("file %s = %q, want %q", p, raw.files[p], w)
		}
	}
	if raw.links["/usr/local/cuda"] != "cuda-12.4" {
		t.Errorf("link = %q", raw.links["/usr/local/cuda"])
	}
	if c := raw.cmds["rpm"]; c.rc != 0 || c.out != "x\t1:2-3\tx86_64" {
		t.Errorf("cmd = %+v", c)
	}
}

func parseOne(t *testing.T, records ...string) *Node {
	t.Helper()
	m := minimal()
	// Later records for the same path win, so records here override minimal.
	n, err := Parse([]byte(probeOutput(append(m, append(records, end)...)...)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestParseDriver(t *testing.T) {
	tests := map[string]struct {
		text string
		want Driver
	}{
		// Formats from open-gpu-kernel-modules utils.mk and nixGL issue 186.
		"open x86_64": {
			"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  (dvs-builder@U16-A24-9-2)  Thu Oct 10 12:15:00 UTC 2024\nGCC version:  gcc version 13.3.0\n",
			Driver{Version: "565.57.01", Flavor: FlavorOpen, NVRM: "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  (dvs-builder@U16-A24-9-2)  Thu Oct 10 12:15:00 UTC 2024"},
		},
		"proprietary": {
			"NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 18:56:32 UTC 2023\n",
			Driver{Version: "535.129.03", Flavor: FlavorProprietary, NVRM: "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19 18:56:32 UTC 2023"},
		},
		"two-part version": {
			"NVRM version: NVIDIA UNIX aarch64 Kernel Module  560.35  Mon\n",
			Driver{Version: "560.35", Flavor: FlavorProprietary, NVRM: "NVRM version: NVIDIA UNIX aarch64 Kernel Module  560.35  Mon"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			n := parseOne(t, file("/proc/driver/nvidia/version", tc.text))
			if diff := cmp.Diff(&tc.want, n.Driver); diff != "" {
				t.Errorf("driver (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("unreadable version", func(t *testing.T) {
		n := parseOne(t, file("/proc/driver/nvidia/version", "NVRM version: something else\n"))
		if n.Driver == nil || n.Driver.Version != "" || len(n.Warnings) != 1 {
			t.Errorf("driver %+v warnings %q: want a driver without version and a warning", n.Driver, n.Warnings)
		}
	})
}

func TestParsePackages(t *testing.T) {
	status := "Package: a\nStatus: install ok installed\nVersion: 1.0-1\nArchitecture: amd64\n\n" +
		"Package: held\nStatus: hold ok installed\nVersion: 1:4.6.0-1\nArchitecture: amd64\n\n" +
		// Removed but not purged: dpkg keeps the stanza with config-files.
		"Package: gone\nStatus: deinstall ok config-files\nVersion: 2\nArchitecture: amd64\n\n" +
		"Package: purged\nStatus: purge ok not-installed\nArchitecture: amd64\n\n" +
		// Left behind by an interrupted dpkg run (dpkg -l: iU, iF, iH,
		// iW, iT): there, in a state that needs dpkg --configure -a.
		"Package: nccl-u\nStatus: install ok unpacked\nVersion: 2.21.5-1+cuda12.4\nArchitecture: amd64\n\n" +
		"Package: nccl-f\nStatus: hold reinstreq half-configured\nVersion: 2.21.5-1+cuda12.4\nArchitecture: amd64\n\n" +
		"Package: h\nStatus: install reinstreq half-installed\nVersion: 3\nArchitecture: amd64\n\n" +
		"Package: w\nStatus: install ok triggers-awaited\nVersion: 4\nArchitecture: amd64\n\n" +
		"Package: p\nStatus: install ok triggers-pending\nVersion: 5\nArchitecture: amd64\n"
	n := parseOne(t, file("/var/lib/dpkg/status", status))
	want := Packages{Manager: ManagerDpkg, Installed: map[string]Package{
		"a":      {Version: "1.0-1", Arch: "amd64"},
		"held":   {Version: "1:4.6.0-1", Arch: "amd64", Held: true},
		"nccl-u": {Version: "2.21.5-1+cuda12.4", Arch: "amd64", State: "unpacked"},
		"nccl-f": {Version: "2.21.5-1+cuda12.4", Arch: "amd64", Held: true, State: "half-configured"},
		"h":      {Version: "3", Arch: "amd64", State: "half-installed"},
		"w":      {Version: "4", Arch: "amd64", State: "triggers-awaited"},
		"p":      {Version: "5", Arch: "amd64", State: "triggers-pending"},
	}}
	if diff := cmp.Diff(want, n.Packages); diff != "" {
		t.Errorf("dpkg (-want +got):\n%s", diff)
	}
	// dpkg's journal (updates/0000, 0001, …) overrides status in order:
	// a killed dpkg leaves its latest states there, removals included.
	j := parseOne(t, file("/var/lib/dpkg/status", status),
		file("/var/lib/dpkg/updates/0001", "Package: nccl-u\nStatus: install ok half-configured\nVersion: 2.21.5-1+cuda12.4\nArchitecture: amd64\n"),
		file("/var/lib/dpkg/updates/0000", "Package: nccl-u\nStatus: install ok unpacked\nVersion: 2.21.5-1+cuda12.4\nArchitecture: amd64\n\nPackage: a\nStatus: deinstall ok config-files\nVersion: 1.0-1\nArchitecture: amd64\n"))
	if got := j.Packages.Installed["nccl-u"].State; got != "half-configured" {
		t.Errorf("journalled state = %q, want half-configured (the later journal entry)", got)
	}
	if _, ok := j.Packages.Installed["a"]; ok {
		t.Errorf("a package the journal records as removed is still installed")
	}
	if got := strings.Join(n.InterruptedPackages(), ", "); got != "h (half-installed), nccl-f (half-configured), nccl-u (unpacked), p (triggers-pending), w (triggers-awaited)" {
		t.Errorf("InterruptedPackages = %s", got)
	}
	n = parseOne(t,
		file("/etc/dnf/plugins/versionlock.list", "# comment\nnvidia-driver-3:550.90.07-1.el9.*\n!libnccl-2.21.5-1+cuda12.4.*\n"),
		"@@n1 cmd rpm 0\nnvidia-driver\t3:550.90.07-1.el9\tx86_64\nlibnccl\t(none):2.21.5-1+cuda12.4\tx86_64\nbroken line\n@@n1 eof\n")
	want = Packages{Manager: ManagerRPM, Locks: []string{"nvidia-driver-3:550.90.07-1.el9.*", "!libnccl-2.21.5-1+cuda12.4.*"}, Installed: map[string]Package{
		"nvidia-driver": {Version: "3:550.90.07-1.el9", Arch: "x86_64", Held: true},
		// An exclusion ("!") is not a lock.
		"libnccl": {Version: "2.21.5-1+cuda12.4", Arch: "x86_64"},
	}}
	if diff := cmp.Diff(want, n.Packages); diff != "" {
		t.Errorf("rpm (-want +got):\n%s", diff)
	}
	// Repository candidates of NVIDIA's driver packages, from apt's lists.
	n = parseOne(t, "@@n1 cmd apt-candidates 0\nnvidia-open 590.44.01-1\nnvidia-open 580.95.05-1\nnvidia-open 580.95.05-1\njunk\nnvidia-fabricmanager-580 580.95.05-1\n@@n1 eof\n")
	if diff := cmp.Diff(map[string][]string{"nvidia-open": {"590.44.01-1", "580.95.05-1"}, "nvidia-fabricmanager-580": {"580.95.05-1"}}, n.Packages.Available); diff != "" {
		t.Errorf("apt candidates (-want +got):\n%s", diff)
	}
	n = parseOne(t, "@@n1 cmd rpm 1\nerror: rpmdb open failed\n@@n1 eof\n")
	if n.Packages.Manager != "" || len(n.Warnings) != 1 || !strings.Contains(n.Warnings[0], "rpmdb open failed") {
		t.Errorf("failed rpm: manager %q warnings %q", n.Packages.Manager, n.Warnings)
	}
}

// TestParseArchFromPackages: an unpacked image has no /proc; the installed
// packages' architecture stands in.
func TestParseArchFromPackages(t *testing.T) {
	var recs []string
	for _, p := range requiredPaths {
		recs = append(recs, missing(p))
	}
	recs = append(recs, file("/etc/os-release", "ID=debian\n"),
		file("/var/lib/dpkg/status", "Package: a\nStatus: install ok installed\nVersion: 1\nArchitecture: arm64\n\nPackage: b\nStatus: install ok installed\nVersion: 1\nArchitecture: all\n"), end)
	n, err := Parse([]byte(probeOutput(recs...)))
	if err != nil {
		t.Fatal(err)
	}
	if n.Arch != "aarch64" || len(n.Warnings) != 0 {
		t.Errorf("arch %q warnings %q", n.Arch, n.Warnings)
	}
	recs[len(recs)-2] = missing("/var/lib/dpkg/status")
	if n, _ := Parse([]byte(probeOutput(recs...))); n.Arch != "" || len(n.Warnings) != 1 {
		t.Errorf("no packages: arch %q warnings %q, want a warning", n.Arch, n.Warnings)
	}
}

func TestParseShmAndMemory(t *testing.T) {
	meminfo := file("/proc/meminfo", "MemTotal:       1000 kB\nHugePages_Total:   4\nHugePages_Free:    2\nHugepagesize:       2048 kB\n")
	tests := map[string]struct {
		mounts      string
		wantSize    uint64
		wantDefault bool
	}{
		"default size":    {"tmpfs /dev/shm tmpfs rw,nosuid,nodev 0 0\n", 512000, true},
		"k size":          {"tmpfs /dev/shm tmpfs rw,size=65536k 0 0\n", 64 << 20, false},
		"percent":         {"tmpfs /dev/shm tmpfs rw,size=50% 0 0\n", 512000, false},
		"last mount wins": {"tmpfs /dev/shm tmpfs rw,size=1k 0 0\ntmpfs /dev/shm tmpfs rw,size=2g 0 0\n", 2 << 30, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			n := parseOne(t, meminfo, file("/proc/mounts", tc.mounts))
			if n.Shm.SizeBytes != tc.wantSize || n.Shm.SizeFromDefault != tc.wantDefault || !n.Shm.Mounted {
				t.Errorf("shm = %+v, want size %d default %v", n.Shm, tc.wantSize, tc.wantDefault)
			}
			if n.MemoryBytes != 1024000 || n.HugePages.Total != 4 || n.HugePages.PageSizeBytes != 2<<20 {
				t.Errorf("memory %d hugepages %+v", n.MemoryBytes, n.HugePages)
			}
		})
	}
	n := parseOne(t, meminfo, file("/proc/mounts", "tmpfs /dev/shm tmpfs rw,size=lots 0 0\n"))
	if len(n.Warnings) != 1 {
		t.Errorf("bad size= gave warnings %q, want one", n.Warnings)
	}
}

func TestParseGrub(t *testing.T) {
	n := parseOne(t,
		file("/etc/default/grub", "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\nGRUB_CMDLINE_LINUX=\"\"\n"),
		file("/etc/default/grub.d/50-cloudimg-settings.cfg", "GRUB_CMDLINE_LINUX_DEFAULT=\"console=tty1 console=ttyS0\"\n"),
		file("/etc/default/grub.d/90-gpuform.cfg", "# Managed by gpuform.\nGRUB_CMDLINE_LINUX=\"${GRUB_CMDLINE_LINUX} iommu=pt\"\nGRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX amd_iommu=on\"\n"),
		// update-grub sources only *.cfg drop-ins.
		file("/etc/default/grub.d/README", "GRUB_CMDLINE_LINUX=ignored\n"))
	if diff := cmp.Diff([]string{"iommu=pt", "amd_iommu=on"}, n.Grub.CmdlineLinux); diff != "" {
		t.Errorf("GRUB_CMDLINE_LINUX (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"console=tty1", "console=ttyS0"}, n.Grub.CmdlineLinuxDefault); diff != "" {
		t.Errorf("GRUB_CMDLINE_LINUX_DEFAULT (-want +got):\n%s", diff)
	}
	if n.Grub.File != "/etc/default/grub.d/90-gpuform.cfg" || len(n.Grub.DropIns) != 3 {
		t.Errorf("grub file %q drop-ins %d", n.Grub.File, len(n.Grub.DropIns))
	}
}

func TestParseOther(t *testing.T) {
	n := parseOne(t,
		file("/etc/os-release", "ID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID='9.4'\nPRETTY_NAME=\"Rocky \\\"Linux\\\" 9.4\" # comment\n"),
		file("/proc/cmdline", "BOOT_IMAGE=/vmlinuz ro quiet param=\"a b\" iommu=pt iommu=off\n"),
		file("/etc/docker/daemon.json", "{\"default-shm-size\": \"16G\", \"big\": 12345678901234567890}"),
		file("/etc/nvidia-container-runtime/config.toml", "top = 1 # c\n[nvidia-container-runtime]\nmode = \"cdi\"\n#mode = \"legacy\"\n[nvidia-container-cli]\nldconfig = '@/sbin/ldconfig'\n"),
		file("/etc/security/limits.d/90-gpuform.conf", "* soft memlock unlimited # why\n# skipped\nbad line\n"),
		file("/sys/devices/system/cpu/online", "0-3,8\n"),
		file("/proc/cpuinfo", "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n"),
		file("/sys/devices/system/cpu/cpu0/topology/physical_package_id", "0\n"),
	)
	if n.OS.Family() != "rhel" || n.OS.VersionID != "9.4" || n.OS.Pretty != "Rocky \"Linux\" 9.4" {
		t.Errorf("os = %+v family %q", n.OS, n.OS.Family())
	}
	if v, ok := n.Kernel.Arg("iommu"); !ok || v != "off" {
		t.Errorf("iommu = %q %v, want the last occurrence", v, ok)
	}
	if v, ok := n.Kernel.Arg("param"); !ok || v != "a b" {
		t.Errorf("quoted param = %q", v)
	}
	if _, ok := n.Kernel.Arg("quiet"); !ok {
		t.Errorf("bare flag quiet not found in %q", n.Kernel.Cmdline)
	}
	if n.Docker.ShmSize() != "16G" {
		t.Errorf("docker shm = %q", n.Docker.ShmSize())
	}
	// The big number is past float64's 2^53: it is kept as the digits
	// the file has, in the parsed object and when it is written back.
	wantDaemon := map[string]any{"default-shm-size": "16G", "big": json.Number("12345678901234567890")}
	if diff := cmp.Diff(wantDaemon, n.Docker.Daemon); diff != "" {
		t.Errorf("daemon.json (-want +got):\n%s", diff)
	}
	b, err := json.Marshal(n.Docker.Daemon)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var back map[string]any
	if err := dec.Decode(&back); err != nil {
		t.Fatalf("daemon.json written back: %v\n%s", err, b)
	}
	if diff := cmp.Diff(wantDaemon, back); diff != "" {
		t.Errorf("daemon.json written back lost precision (-want +got):\n%s", diff)
	}
	wantKeys := map[string]string{"top": "1", "nvidia-container-runtime.mode": "cdi", "nvidia-container-cli.ldconfig": "@/sbin/ldconfig"}
	if diff := cmp.Diff(wantKeys, n.ContainerRuntime.Keys); diff != "" {
		t.Errorf("toml keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]LimitEntry{{File: "/etc/security/limits.d/90-gpuform.conf", Domain: "*", Type: "soft", Item: "memlock", Value: "unlimited"}}, n.Limits); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
	if n.CPU.LogicalCPUs != 5 || n.CPU.Sockets != 1 || n.CPU.Model != "ARM implementer 0x41 part 0xd4f" {
		t.Errorf("cpu = %+v", n.CPU)
	}
	n = parseOne(t, file("/etc/docker/daemon.json", "[1, 2]"))
	if n.Docker.Error == "" || !n.Docker.Present || len(n.Warnings) != 1 {
		t.Errorf("non-object daemon.json: %+v warnings %q", n.Docker, n.Warnings)
	}
}

func TestParsePCI(t *testing.T) {
	base := "/sys/bus/pci/devices/0000:1b:00.0"
	n := parseOne(t,
		"@@n1 link "+base+"\n../../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:01.0/0000:1b:00.0\n",
		"@@n1 link "+base+"/driver\n../../../../bus/pci/drivers/nvidia\n",
		file(base+"/class", "0x030200\n"), file(base+"/vendor", "0x10de\n"), file(base+"/device", "0x2330\n"),
		file(base+"/numa_node", "-1\n"), file(base+"/current_link_speed", "2.5 GT/s PCIe\n"),
		file(base+"/max_link_speed", "32.0 GT/s PCIe\n"), file(base+"/current_link_width", "16\n"), file(base+"/max_link_width", "16\n"),
		// A NIC under the same switch, with its RDMA device and netdev.
		"@@n1 link /sys/bus/pci/devices/0000:18:00.0\n../../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0\n",
		file("/sys/bus/pci/devices/0000:18:00.0/class", "0x020700\n"), file("/sys/bus/pci/devices/0000:18:00.0/vendor", "0x15b3\n"),
		"@@n1 exists /sys/bus/pci/devices/0000:18:00.0/net/ibp24s0\n",
		"@@n1 exists /sys/bus/pci/devices/0000:18:00.0/infiniband/mlx5_0\n",
		// A device class the probe should never send is ignored, not guessed at.
		file("/sys/bus/pci/devices/0000:00:14.0/class", "0x0c0330\n"),
		"@@n1 link /sys/class/infiniband/mlx5_0/device\n../../../0000:18:00.0\n",
		"@@n1 exists /sys/class/infiniband/mlx5_0/device/net/ibp24s0\n",
		file("/sys/class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n"),
		file("/sys/class/infiniband/mlx5_0/ports/1/rate", "400 Gb/sec (4X NDR)\n"),
	)
	if len(n.PCI) != 2 {
		t.Fatalf("got %d PCI devices, want 2: %+v", len(n.PCI), n.PCI)
	}
	gpu, nic := n.PCI[1], n.PCI[0]
	want := PCIDevice{Address: "0000:1b:00.0", Kind: KindGPU, Class: "0x030200", Vendor: "0x10de", Device: "0x2330", NUMANode: -1,
		CurrentLinkSpeed: "2.5 GT/s PCIe", MaxLinkSpeed: "32.0 GT/s PCIe", CurrentLinkWidth: 16, MaxLinkWidth: 16,
		Parents: []string{"0000:15:01.0", "0000:16:00.0", "0000:17:01.0"}, Driver: "nvidia"}
	if diff := cmp.Diff(want, gpu); diff != "" {
		t.Errorf("gpu (-want +got):\n%s", diff)
	}
	if got := CommonParent(gpu, nic); got != "0000:16:00.0" {
		t.Errorf("CommonParent = %q, want the switch upstream port", got)
	}
	if LinkGen(gpu.MaxLinkSpeed) != 5 || LinkGen(gpu.CurrentLinkSpeed) != 1 || LinkGen("Unknown") != 0 {
		t.Errorf("LinkGen wrong")
	}
	if len(n.NVIDIAGPUs()) != 1 || len(n.NICs()) != 1 || nic.NetDevs[0] != "ibp24s0" || nic.RDMADevs[0] != "mlx5_0" {
		t.Errorf("helpers: gpus %d nics %d nic %+v", len(n.NVIDIAGPUs()), len(n.NICs()), nic)
	}
	r, ok := n.RDMADevice("mlx5_0")
	wantR := RDMADevice{Name: "mlx5_0", Address: "0000:18:00.0", NetDevs: []string{"ibp24s0"}, Ports: []RDMAPort{{Port: 1, LinkLayer: "InfiniBand", Rate: "400 Gb/sec (4X NDR)"}}}
	if diff := cmp.Diff(wantR, r); !ok || diff != "" {
		t.Errorf("rdma (-want +got):\n%s", diff)
	}
}

func TestParseUnits(t *testing.T) {
	n := parseOne(t,
		// The units the declarations watch, announced before their
		// records; one with no records reads as not-found.
		"@@n1 unit docker.service\n@@n1 unit nvidia-dcgm.service\n@@n1 unit nvidia-persistenced.service\n",
		"@@n1 unit nvidia-fabricmanager.service\n@@n1 unit containerd.service\n@@n1 unit irqbalance.service\n",
		"@@n1 unit gpuform-nic-irq.service\n@@n1 unit slurmd.service\n",
		// Live root: systemctl output (TestParseLiveUnits has more).
		"@@n1 cmd is-enabled:docker.service 0\nenabled\n@@n1 eof\n",
		"@@n1 cmd is-enabled:nvidia-dcgm.service 1\nFailed to get unit file state for nvidia-dcgm.service: No such file or directory\n@@n1 eof\n",
		// One line for each unit announced, in order: the probe asks
		// is-active once for all of them.
		"@@n1 cmd is-active 3\ninactive\nfailed\ninactive\ninactive\ninactive\ninactive\ninactive\ninactive\n@@n1 eof\n",
		// Root prefix: files.
		"@@n1 exists /lib/systemd/system/nvidia-persistenced.service\n",
		"@@n1 exists /etc/systemd/system/multi-user.target.wants/nvidia-persistenced.service\n",
		"@@n1 exists /run/systemd/units/invocation:nvidia-persistenced.service\n",
		"@@n1 exists /usr/lib/systemd/system/nvidia-fabricmanager.service\n",
		"@@n1 link /etc/systemd/system/containerd.service\n/dev/null\n",
	)
	want := map[string]UnitState{
		"docker.service":               {Enabled: "enabled", Active: "inactive"},
		"nvidia-dcgm.service":          {Enabled: "not-found", Active: "failed"},
		"nvidia-persistenced.service":  {Enabled: "enabled", Active: "active"},
		"nvidia-fabricmanager.service": {Enabled: "disabled", Active: "inactive"},
		"containerd.service":           {Enabled: "masked", Active: "inactive"},
		"irqbalance.service":           {Enabled: "not-found", Active: "inactive"},
		"gpuform-nic-irq.service":      {Enabled: "not-found", Active: "inactive"},
		"slurmd.service":               {Enabled: "not-found", Active: "inactive"},
	}
	if diff := cmp.Diff(want, n.Units); diff != "" {
		t.Errorf("units (-want +got):\n%s", diff)
	}
	if n.Unit("nvidia-persistenced").Active != "active" || n.Unit("nope").Enabled != "not-found" {
		t.Errorf("Unit helper wrong")
	}
}

// TestParseLiveUnits: on a live root the probe asks systemctl
// list-unit-files once for all the units, and is-active once for all of
// them, which prints one line a unit in the order asked; output that
// cannot be mapped a line a unit (no systemd running prints an error
// sentence once) reads as unknown.
func TestParseLiveUnits(t *testing.T) {
	announce := "@@n1 unit docker.service\n@@n1 unit nvidia-dcgm.service\n@@n1 unit slurmd.service\n"
	// systemd 252's columns; nvidia-dcgm has no unit file, so no line.
	enabled := "@@n1 cmd unit-files 0\ndocker.service enabled enabled\nslurmd.service static  -\n@@n1 eof\n"
	states := func(docker, dcgm, slurmd string) map[string]UnitState {
		return map[string]UnitState{
			"docker.service":      {Enabled: "enabled", Active: docker},
			"nvidia-dcgm.service": {Enabled: "not-found", Active: dcgm},
			"slurmd.service":      {Enabled: "static", Active: slurmd},
		}
	}
	for _, c := range []struct {
		name, active string
		want         map[string]UnitState
	}{
		{"a line a unit", "@@n1 cmd is-active 3\nactive\ninactive\nactivating\n@@n1 eof\n", states("active", "inactive", "activating")},
		{"no systemd running", "@@n1 cmd is-active 1\nSystem has not been booted with systemd as init system (PID 1). Can't operate.\nFailed to connect to bus: Host is down\n@@n1 eof\n",
			states("unknown", "unknown", "unknown")},
		{"fewer lines than units", "@@n1 cmd is-active 0\nactive\ninactive\n@@n1 eof\n", states("unknown", "unknown", "unknown")},
		{"more lines than units", "@@n1 cmd is-active 0\nactive\nactive\nactive\nactive\n@@n1 eof\n", states("unknown", "unknown", "unknown")},
		{"an error among the lines", "@@n1 cmd is-active 1\nactive\nFailed to get unit: Access denied\ninactive\n@@n1 eof\n", states("active", "unknown", "inactive")},
		{"no output", "@@n1 cmd is-active 0\n\n@@n1 eof\n", states("inactive", "inactive", "inactive")},
		{"not asked", "", states("inactive", "inactive", "inactive")},
		// The probe does not ask where systemd does not run, and says so.
		{"not asked, no systemd running", "@@n1 missing /run/systemd/system\n", states("unknown", "unknown", "unknown")},
		{"asked, systemd running", "@@n1 exists /run/systemd/system\n@@n1 cmd is-active 3\nactive\ninactive\nactivating\n@@n1 eof\n", states("active", "inactive", "activating")},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := parseOne(t, announce, enabled, c.active)
			if diff := cmp.Diff(c.want, n.Units); diff != "" {
				t.Errorf("units (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseUnitFiles: what systemctl list-unit-files printed, and the
// is-enabled records the probe sends for a name it cannot list (a glob
// pattern) and for every unit when the listing failed with a message.
func TestParseUnitFiles(t *testing.T) {
	announce := "@@n1 unit docker.service\n@@n1 unit nvidia-dcgm.service\n@@n1 unit getty@tty1.service\n"
	cmd := func(name string, rc int, out string) string {
		return fmt.Sprintf("@@n1 cmd %s %d\n%s\n@@n1 eof\n", name, rc, out)
	}
	getty := cmd("is-enabled:getty@tty1.service", 0, "enabled")
	failed := cmd("unit-files", 1, "Failed to list unit files: Access denied")
	each := cmd("is-enabled:docker.service", 1, "masked") +
		cmd("is-enabled:nvidia-dcgm.service", 1, "Failed to get unit file state for nvidia-dcgm.service: No such file or directory")
	for _, c := range []struct {
		name, records          string
		docker, dcgm, gettySet string
	}{
		{"listed and asked", cmd("unit-files", 0, "docker.service enabled-runtime enabled") + getty, "enabled-runtime", "not-found", "enabled"},
		// systemd 219 (RHEL 7) prints no PRESET column.
		{"two columns", cmd("unit-files", 0, "nvidia-dcgm.service disabled") + getty, "not-found", "disabled", "enabled"},
		{"none has a unit file", cmd("unit-files", 1, "") + getty, "not-found", "not-found", "enabled"},
		// A line that is not a watched unit with a one-word state is
		// not a state: a warning, another unit, a header.
		{"other lines", cmd("unit-files", 0, "Warning: the unit file changed on disk.\nssh.service enabled enabled\nUNIT FILE STATE\ndocker.service Enabled\nnvidia-dcgm.service static -") + getty,
			"not-found", "static", "enabled"},
		{"failed, each asked", failed + each + getty, "masked", "not-found", "enabled"},
		{"failed, not asked again", failed, "unknown", "unknown", "unknown"},
		{"only is-enabled", each + getty, "masked", "not-found", "enabled"},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := parseOne(t, announce, c.records)
			want := map[string]UnitState{
				"docker.service":      {Enabled: c.docker, Active: "inactive"},
				"nvidia-dcgm.service": {Enabled: c.dcgm, Active: "inactive"},
				"getty@tty1.service":  {Enabled: c.gettySet, Active: "inactive"},
			}
			if diff := cmp.Diff(want, n.Units); diff != "" {
				t.Errorf("units (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFingerprint(t *testing.T) {
	a := parseOne(t, file("/proc/cmdline", "ro\n"))
	b := parseOne(t, file("/proc/cmdline", "ro\n"))
	b.Host = "elsewhere"
	b.Root = "/srv/sim/elsewhere"
	// A job mapping huge pages does not make a saved plan stale.
	b.HugePages.Free = 512
	if a.Fingerprint() != b.Fingerprint() {
		t.Errorf("fingerprint depends on Host, Root or free huge pages")
	}
	c := parseOne(t, file("/proc/cmdline", "ro iommu=pt\n"))
	if a.Fingerprint() == c.Fingerprint() || len(a.Fingerprint()) != 64 {
		t.Errorf("fingerprint %q does not change with facts", a.Fingerprint())
	}
}

func TestParseCPUList(t *testing.T) {
	tests := map[string]struct {
		in   string
		want int
		err  bool
	}{
		"range and single": {"0-55,112-167", 112, false},
		"empty":            {"", 0, false},
		"reversed":         {"5-1", 0, true},
		"junk":             {"a-b", 0, true},
		// A huge range from a corrupted file must not allocate gigabytes.
		"huge": {"0-999999999", 0, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			n, err := CountCPUList(tc.in)
			if (err != nil) != tc.err || n != tc.want {
				t.Errorf("CountCPUList(%q) = %d, %v", tc.in, n, err)
			}
		})
	}
}

// TestProbeScriptRequiredPaths: every path the parser requires is read by
// probe.sh itself or is a file a declaration must name (requiredReads,
// which Reads.check enforces); TestProbeReadsDeclared and
// resource.TestDeclaredReads cover what the declarations drive.
func TestProbeScriptRequiredPaths(t *testing.T) {
	for _, p := range requiredPaths {
		if !strings.Contains(probeBody, p) && !slices.Contains(requiredReads, p) {
			t.Errorf("probe.sh does not report required path %s and no declaration must name it", p)
		}
	}
	for _, p := range requiredReads {
		if !slices.Contains(requiredPaths, p) {
			t.Errorf("required read %s is not a required path", p)
		}
		if strings.Contains(probeBody, p) {
			t.Errorf("probe.sh names %s itself: it must come from the declarations", p)
		}
		if err := (Reads{}).check(); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("Reads{}.check() = %v, want it to refuse declarations without %s", err, p)
		}
	}
}

// TestParseUnreadable: a file that exists but the login user cannot read
// (/etc/docker mode 0700 on a hardened node, probed without become) must not
// read as absent, or plan would offer to create a daemon.json that exists.
func TestParseUnreadable(t *testing.T) {
	tests := []struct {
		name    string
		records []string
		check   func(*Node) string
	}{
		{"daemon.json", []string{"@@n1 unreadable /etc/docker/daemon.json\n"}, func(n *Node) string {
			if !n.Docker.Present || n.Docker.Error == "" || n.Docker.Daemon != nil {
				return fmt.Sprintf("docker %+v: want present, with an error, no settings", n.Docker)
			}
			return ""
		}},
		{"required path", []string{"@@n1 unreadable /proc/driver/nvidia/version\n"}, func(n *Node) string {
			if n.Driver != nil {
				return fmt.Sprintf("driver %+v from an unreadable file", n.Driver)
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := minimal()
			if tt.name == "required path" {
				// The unreadable record stands in for the required one.
				m = slices.DeleteFunc(m, func(r string) bool { return strings.Contains(r, "/proc/driver/nvidia/version") })
			}
			n, err := Parse([]byte(probeOutput(append(m, append(tt.records, end)...)...)))
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(n); msg != "" {
				t.Error(msg)
			}
			if len(n.Warnings) != 1 || !strings.Contains(n.Warnings[0], "cannot be read") {
				t.Errorf("warnings %q: want one saying the file cannot be read", n.Warnings)
			}
		})
	}
}

// TestCDISpec reads nvidia-ctk cdi generate's output: its kind, devices and
// the driver release of the libcuda it mounts; a file that is not a CDI
// spec says so instead of reading as current.
func TestCDISpec(t *testing.T) {
	real, err := os.ReadFile("testdata/cdi/generate-default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := parseOne(t, file("/etc/cdi/nvidia.yaml", string(real)), file("/var/run/cdi/nvidia.yaml", "devices: [\n"))
	got := n.CDISpecs["/etc/cdi/nvidia.yaml"]
	want := CDISpec{Kind: "example.com/device", Devices: []string{"0", "all"}, DriverVersions: []string{"999.88.77"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CDI spec (-want +got):\n%s", diff)
	}
	if bad := n.CDISpecs["/var/run/cdi/nvidia.yaml"]; bad.Error == "" || len(bad.DriverVersions) != 0 {
		t.Errorf("broken CDI spec read as %+v", bad)
	}
}

// TestParseNICIRQsAndMTU: an RDMA NIC's interrupts come with the CPUs
// each may run on, sorted by number (not as the shell listed them), and
// its netdev's MTU; an IRQ whose affinity could not be read keeps "".
func TestParseNICIRQsAndMTU(t *testing.T) {
	n := parseOne(t,
		"@@n1 file /sys/bus/pci/devices/0000:18:00.0/class\n0x020700\n\n@@n1 eof\n",
		"@@n1 exists /sys/bus/pci/devices/0000:18:00.0/infiniband/mlx5_0\n",
		"@@n1 exists /sys/bus/pci/devices/0000:18:00.0/msi_irqs/210\n",
		"@@n1 exists /sys/bus/pci/devices/0000:18:00.0/msi_irqs/99\n",
		"@@n1 exists /sys/bus/pci/devices/0000:18:00.0/msi_irqs/bogus\n",
		"@@n1 file /proc/irq/210/smp_affinity_list\n0-55,112-167\n\n@@n1 eof\n",
		"@@n1 link /sys/class/infiniband/mlx5_0/device\n/sys/devices/pci0000:15/0000:18:00.0\n",
		"@@n1 exists /sys/class/infiniband/mlx5_0/device/net/ibp24s0\n",
		"@@n1 file /sys/class/infiniband/mlx5_0/device/net/ibp24s0/mtu\n4092\n\n@@n1 eof\n",
	)
	if len(n.PCI) != 1 {
		t.Fatalf("pci: %+v", n.PCI)
	}
	if diff := cmp.Diff([]IRQ{{Number: 99}, {Number: 210, CPUs: "0-55,112-167"}}, n.PCI[0].IRQs); diff != "" {
		t.Errorf("irqs (-want +got):\n%s", diff)
	}
	r, _ := n.RDMADevice("mlx5_0")
	if diff := cmp.Diff(map[string]int{"ibp24s0": 4092}, r.MTU); diff != "" {
		t.Errorf("mtu (-want +got):\n%s", diff)
	}
}

// TestParsePair: a pair record gives each of its two files the bytes on
// its side of the separator line, empty ones and newlines included; the
// per-file records that follow a failed od replace them.
func TestParsePair(t *testing.T) {
	hexOf := func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			fmt.Fprintf(&b, " %02x", s[i])
			if i%16 == 15 {
				b.WriteString("\n")
			}
		}
		return b.String() + "\n"
	}
	pair := func(a, b string) string { return "@@n1 pair /a /b\n" + hexOf(a+"@@n1 next\n"+b) + "@@n1 eof\n" }
	for name, tc := range map[string]struct {
		records []string
		a, b    string
	}{
		"both":           {records: []string{pair("x = 1\n", "\x00\xff no newline")}, a: "x = 1\n", b: "\x00\xff no newline"},
		"first empty":    {records: []string{pair("", "y\n")}, a: "", b: "y\n"},
		"both empty":     {records: []string{pair("", "")}, a: "", b: ""},
		"marker inside":  {records: []string{pair("@@n2 next\n@@n1 nex", "t\n")}, a: "@@n2 next\n@@n1 nex", b: "t\n"},
		"replaced after": {records: []string{pair("partial", "z\n"), "@@n1 data /a\n 61 0a\n@@n1 eof\n"}, a: "a\n", b: "z\n"},
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := split([]byte(probeOutput(append(minimal(), append(tc.records, end)...)...)))
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := raw.files["/a"]; !ok || got != tc.a {
				t.Errorf("/a = %q (%v), want %q", got, ok, tc.a)
			}
			if got, ok := raw.files["/b"]; !ok || got != tc.b {
				t.Errorf("/b = %q (%v), want %q", got, ok, tc.b)
			}
		})
	}
}
