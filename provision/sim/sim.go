// Package sim provides simulated GPU nodes: root filesystems of fixture
// files (procfs, sysfs, package databases, configuration) shipped inside the
// gpuform binary, materialised into a state directory, and a transport that
// runs commands locally against such a root. The real facts probe and the
// real apply steps act on a simulated node exactly as on a real one, because
// both address every file as "$GPUFORM_ROOT/…" and the stand-in package
// managers, systemctl, modprobe and friends found first on PATH change the
// root the way the real tools would change a node.
//
// Package sim is not a container or a VM: nothing is isolated, and commands
// that do not go through $GPUFORM_ROOT or the stand-ins act on the real
// machine. It is for demos, tests and first steps, not for untrusted specs.
//
// Because the stand-ins in a root are executed, a root is used only when
// gpuform made it: it carries a marker written at materialisation, and it
// and its state directory must be real directories (no symlinks) owned by
// the user running gpuform and writable by no one else. Anything else is
// refused before a command runs, so state brought in by someone else (a
// pull request, another user of a shared /tmp) is never executed.
package sim

import (
	"bufio"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/gpuform/gpuform/internal/cpulist"
	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/transport"
)

// roots holds one txtar archive per profile and the hardware layers they
// build on. Archives rather than directory trees, because sysfs paths hold
// colons (not allowed in Go module file paths) and symlinks (go:embed
// cannot store them); see roots/README.md for the format.
//
//go:embed roots/*.txtar roots/hw/*.txtar
var roots embed.FS

// standins are the recording stand-ins for package managers and system
// tools, installed into every root's usr/lib/gpuform-sim/bin, and under
// standins/bench those of the measurement tools bench runs, installed only
// in roots that carry captured outputs for them (see benchStandins).
//
//go:embed standins/*
var standins embed.FS

// benchSets are the captured measurement-tool outputs a profile replays,
// one directory per set and tool (bench/SET/TOOL/FILE); a profile names
// its sets in an @bench section. Sources: bench/README.md.
//
//go:embed bench/*/*/*
var benchSets embed.FS

// BenchDir is where a root keeps the captured outputs its measurement-tool
// stand-ins replay, one directory per tool.
const BenchDir = "var/lib/gpuform-sim/bench"

// benchStandins maps each measurement-tool stand-in to the capture
// directory (under BenchDir) whose presence installs it: a simulated node
// has nvbandwidth, ib_write_bw, fio or all_reduce_perf only when its
// profile replays real outputs of that tool, so on every other profile
// bench finds the tool missing, as on a node without the package.
// numactl comes with nvbandwidth, for the NUMA-bound host_gpu runs.
var benchStandins = map[string]string{
	"nvbandwidth":     "nvbandwidth",
	"numactl":         "nvbandwidth",
	"ib_write_bw":     "ib_write_bw",
	"fio":             "fio",
	"all_reduce_perf": "all_reduce_perf",
}

// Scheme is the inventory host prefix that selects a simulated node.
const Scheme = "sim://"

// BinDir is where the stand-ins live inside a root; the sim transport puts
// it first on PATH.
const BinDir = "usr/lib/gpuform-sim/bin"

// NVMLFaultsFile, in a root, lists faults planted in the node's simulated
// NVML, one per line as the NVML agent's --fault takes them ("drop_gpu:4").
const NVMLFaultsFile = "var/lib/gpuform-sim/nvml-faults"

// MarkerFile, at the top of a root, marks it as materialised by gpuform
// and names its profile. It sits outside every path the probe and the
// stand-ins address, so a simulated node cannot change it by its own
// commands.
const MarkerFile = ".gpuform-sim-root"

// markerHeader is the marker's first line; the second is "profile NAME".
const markerHeader = "gpuform simulated node root, version 1"

// Names returns the profiles that can be simulated, sorted.
func Names() []string {
	entries, err := roots.ReadDir("roots")
	if err != nil {
		// The embedded directory always exists; an error is a broken build.
		panic("sim: embedded roots missing: " + err.Error())
	}
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".txtar"); ok && !e.IsDir() {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Description returns the first paragraph of the profile's archive comment.
func Description(name string) (string, error) {
	a, err := load("roots/" + name + ".txtar")
	if err != nil {
		return "", err
	}
	para, _, _ := strings.Cut(strings.TrimSpace(string(a.Comment)), "\n\n")
	return strings.Join(strings.Fields(para), " "), nil
}

// ParseHost splits an inventory host "sim://PROFILE[/INSTANCE]" into its
// profile and instance ("" when absent). ok is false for any other host,
// and for a malformed sim host (empty profile, extra slashes, names with
// characters outside [A-Za-z0-9._-]).
func ParseHost(s string) (profile, instance string, ok bool) {
	rest, found := strings.CutPrefix(s, Scheme)
	if !found {
		return "", "", false
	}
	profile, instance, _ = strings.Cut(rest, "/")
	if !validName(profile) || (instance != "" && !validName(instance)) || strings.Contains(instance, "/") {
		return "", "", false
	}
	return profile, instance, true
}

func validName(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// Materialize extracts profile name into stateDir/name and returns that
// root. A root that is already there is left as it is, so what apply
// changed persists between runs; Reset starts it over.
func Materialize(name, stateDir string) (string, error) {
	return materialize(name, filepath.Join(stateDir, name), name)
}

// MaterializeHost is Materialize for an inventory host: "sim://P" lives in
// stateDir/P and "sim://P/I" in stateDir/P@I, so many simulated hosts can
// share one profile with separate state.
func MaterializeHost(host, stateDir string) (string, error) {
	profile, instance, ok := ParseHost(host)
	if !ok {
		return "", fmt.Errorf("%q is not a simulated host (want %sPROFILE[/INSTANCE])", host, Scheme)
	}
	dir, hostname := profile, profile
	if instance != "" {
		dir += "@" + instance
		hostname = instance
	}
	return materialize(profile, filepath.Join(stateDir, dir), hostname)
}

// Reset removes a materialised root so the next Materialize starts from
// the embedded profile. It refuses a directory that is not a sim root
// (no marker) and a root that is a symbolic link.
func Reset(root string) error {
	fi, err := os.Lstat(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link, not a simulated node root; not removing it", root)
	}
	if _, err := os.Lstat(filepath.Join(root, MarkerFile)); err != nil {
		return fmt.Errorf("%s is not a simulated node root (no %s); not removing it", root, MarkerFile)
	}
	return os.RemoveAll(root)
}

// CheckStateDir creates dir (mode 0700) when it is missing and refuses it
// unless it is a real directory owned by the user running gpuform and
// writable by no one else: the roots in it hold programs gpuform runs.
func CheckStateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("simulated node state: %w", err)
	}
	if err := checkOwned(dir, true); err != nil {
		return refused(dir, err)
	}
	return nil
}

// refused explains why state was not used and how to start over.
func refused(p string, err error) error {
	return fmt.Errorf("refusing simulated node state %s: %w; gpuform runs simulated nodes only from state it created itself (remove %s to start over)", p, err, p)
}

// checkOwned checks that p is a directory (dir) or regular file that is
// not a symbolic link, is owned by the effective user, and is not
// writable by group or others.
func checkOwned(p string, dir bool) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return errors.New("it is a symbolic link")
	case dir && !fi.IsDir():
		return errors.New("it is not a directory")
	case !dir && !fi.Mode().IsRegular():
		return errors.New("it is not a regular file")
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("it is writable by other users (mode %04o)", fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("it is owned by uid %d, not by the user running gpuform (uid %d)", st.Uid, os.Geteuid())
	}
	return nil
}

// checkRoot accepts an existing root only when gpuform made it for profile
// name: owned and private as CheckStateDir demands, with gpuform's marker
// naming the profile, and with real directories all the way down to the
// stand-ins that go first on PATH.
func checkRoot(root, name string) error {
	if err := checkOwned(root, true); err != nil {
		return refused(root, err)
	}
	marker := filepath.Join(root, MarkerFile)
	if err := checkOwned(marker, false); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return refused(root, fmt.Errorf("it has no %s marker, so gpuform did not make it", MarkerFile))
		}
		return refused(root, fmt.Errorf("its marker %s: %w", MarkerFile, err))
	}
	b, err := os.ReadFile(marker)
	if err != nil {
		return refused(root, err)
	}
	header, rest, _ := strings.Cut(string(b), "\n")
	if header != markerHeader {
		return refused(root, fmt.Errorf("its %s marker was not written by this gpuform", MarkerFile))
	}
	if got := strings.TrimSpace(strings.TrimPrefix(rest, "profile ")); got != name {
		return fmt.Errorf("%s holds simulated profile %q, not %q", root, got, name)
	}
	p := root
	for _, c := range strings.Split(BinDir, "/") {
		p = filepath.Join(p, c)
		if err := checkOwned(p, true); err != nil {
			return refused(root, fmt.Errorf("%s: %w", p, err))
		}
	}
	return nil
}

// materialize extracts profile name into root; hostname is the simulated
// node's own host name (the instance, else the profile), which with a
// machine id derived from it tells simulated hosts apart in facts.
func materialize(name, root, hostname string) (string, error) {
	if !validName(name) {
		return "", fmt.Errorf("bad simulated profile name %q", name)
	}
	if _, err := roots.Open("roots/" + name + ".txtar"); err != nil {
		return "", fmt.Errorf("unknown simulated profile %q (have %s)", name, strings.Join(Names(), ", "))
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	parent := filepath.Dir(root)
	if err := CheckStateDir(parent); err != nil {
		return "", err
	}
	if _, err := os.Lstat(root); err == nil {
		if err := checkRoot(root, name); err != nil {
			return "", err
		}
		return root, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	// Build into a temporary sibling and rename, so an interrupted
	// extraction never leaves a half root that a later run would reuse;
	// the marker goes in last. MkdirTemp makes the root 0700.
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(root)+".tmp-")
	if err != nil {
		return "", err
	}
	if err := build(name, tmp); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("materialising %s: %w", name, err)
	}
	if err := writeIdentity(tmp, hostname); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("materialising %s: %w", name, err)
	}
	if err := os.WriteFile(filepath.Join(tmp, MarkerFile), []byte(markerHeader+"\nprofile "+name+"\n"), 0o600); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, root); err != nil {
		os.RemoveAll(tmp)
		// Another process or goroutine materialised the same root first
		// (a fleet run probing one host twice): use theirs, if it passes
		// the same checks as any existing root.
		if cerr := checkRoot(root, name); cerr == nil {
			return root, nil
		}
		return "", err
	}
	return root, nil
}

// writeIdentity gives a root its host name and a machine id derived from
// it (stable across runs, distinct between instances), as systemd writes
// /etc/machine-id: 32 lowercase hex digits.
func writeIdentity(dir, hostname string) error {
	sum := sha256.Sum256([]byte("gpuform-sim " + hostname))
	for p, v := range map[string]string{
		"proc/sys/kernel/hostname": hostname,
		"etc/machine-id":           hex.EncodeToString(sum[:16]),
	} {
		if err := writeFile(filepath.Join(dir, filepath.FromSlash(p)), []byte(v+"\n")); err != nil {
			return err
		}
	}
	return nil
}

// build writes profile name (and the layers it names) into dir.
func build(name, dir string) error {
	var faults []DeviceFault
	if err := applyArchive("roots/"+name+".txtar", dir, 0, &faults); err != nil {
		return err
	}
	// The fault description goes last: it changes what the layers wrote.
	if err := applyFaults(dir, faults); err != nil {
		return fmt.Errorf("%s %s: %w", name, FaultsSection, err)
	}
	// nvidia-smi answers from the NVML the description just planted.
	if err := writeNvidiaSMI(dir, name); err != nil {
		return fmt.Errorf("%s nvidia-smi: %w", name, err)
	}
	bin := filepath.Join(dir, filepath.FromSlash(BinDir))
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	entries, err := standins.ReadDir("standins")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := standins.ReadFile("standins/" + e.Name())
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(bin, e.Name()), b, 0o755); err != nil {
			return err
		}
	}
	for tool, captures := range benchStandins {
		if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(BenchDir), captures)); err != nil || !fi.IsDir() {
			continue
		}
		b, err := standins.ReadFile("standins/bench/" + tool)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(bin, tool), b, 0o755); err != nil {
			return err
		}
	}
	return shelveBenchTools(dir)
}

// BenchPackagesFile, in a root, lists the measurement tools the node has
// captures for but not installed, one "PACKAGE COMMAND..." line each
// ("perftest ib_write_bw"): their stand-ins wait in ShelfDir/PACKAGE/
// until the package manager stand-ins install PACKAGE, as a node whose
// repository carries the package that bench { tools } installs.
const BenchPackagesFile = "var/lib/gpuform-sim/bench-packages"

// ShelfDir is where a root keeps the stand-ins of packaged measurement
// tools not yet installed.
const ShelfDir = "usr/lib/gpuform-sim/shelf"

// shelveBenchTools moves the stand-ins BenchPackagesFile names from the
// root's BinDir to ShelfDir.
func shelveBenchTools(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(BenchPackagesFile)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	bin := filepath.Join(dir, filepath.FromSlash(BinDir))
	return eachLine(b, func(line string) error {
		f := strings.Fields(line)
		if len(f) < 2 || !validName(f[0]) {
			return fmt.Errorf("%s: want \"PACKAGE COMMAND...\", not %q", BenchPackagesFile, line)
		}
		shelf := filepath.Join(dir, filepath.FromSlash(ShelfDir), f[0])
		if err := os.MkdirAll(shelf, 0o755); err != nil {
			return err
		}
		for _, cmd := range f[1:] {
			if _, ok := benchStandins[cmd]; !ok {
				return fmt.Errorf("%s: %q is not a measurement-tool stand-in", BenchPackagesFile, cmd)
			}
			if err := os.Rename(filepath.Join(bin, cmd), filepath.Join(shelf, cmd)); err != nil {
				return fmt.Errorf("%s: %s has no captures to replay: %w", BenchPackagesFile, cmd, err)
			}
		}
		return nil
	})
}

// addBench copies capture set name (bench/NAME/TOOL/FILE) into the root's
// BenchDir; a later set's file replaces an earlier one's, so a modelled
// set lists only what it changes.
func addBench(dir, name string) error {
	if !validName(name) {
		return fmt.Errorf("bad capture set %q", name)
	}
	tools, err := benchSets.ReadDir("bench/" + name)
	if err != nil {
		return fmt.Errorf("no capture set %q", name)
	}
	for _, t := range tools {
		files, err := benchSets.ReadDir("bench/" + name + "/" + t.Name())
		if err != nil {
			return err
		}
		for _, f := range files {
			b, err := benchSets.ReadFile("bench/" + name + "/" + t.Name() + "/" + f.Name())
			if err != nil {
				return err
			}
			if err := writeFile(filepath.Join(dir, filepath.FromSlash(BenchDir), t.Name(), f.Name()), b); err != nil {
				return err
			}
		}
	}
	return nil
}

func load(name string) (*txtar.Archive, error) {
	b, err := roots.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return txtar.Parse(b), nil
}

// applyArchive writes one archive into dir, its @base layer (a hardware
// layer or another profile) first, and adds its fault description to
// faults for build to apply once every archive is written.
func applyArchive(name, dir string, depth int, faults *[]DeviceFault) error {
	if depth > 4 {
		return fmt.Errorf("%s: @base nesting too deep", name)
	}
	a, err := load(name)
	if err != nil {
		return err
	}
	var specials []txtar.File
	for _, f := range a.Files {
		if f.Name == "@base" {
			base := strings.TrimSpace(string(f.Data))
			if !validName(base) {
				return fmt.Errorf("%s: bad @base %q", name, base)
			}
			// A hardware layer, else another profile: a variant of a
			// profile (one NIC degraded) names the profile it varies.
			if err := applyArchive(layerPath(base), dir, depth+1, faults); err != nil {
				return err
			}
		}
	}
	for _, f := range a.Files {
		switch {
		case f.Name == "@base":
		case strings.HasPrefix(f.Name, "@"):
			specials = append(specials, f)
		default:
			p, err := inRoot(dir, f.Name)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if err := writeFile(p, f.Data); err != nil {
				return err
			}
		}
	}
	for _, f := range specials {
		var err error
		switch f.Name {
		case "@links":
			err = eachLine(f.Data, func(line string) error { return addLink(dir, line) })
		case "@dirs":
			err = eachLine(f.Data, func(line string) error {
				p, err := inRoot(dir, line)
				if err != nil {
					return err
				}
				return os.MkdirAll(p, 0o755)
			})
		case "@pci":
			err = eachLine(f.Data, func(line string) error { return addPCI(dir, line) })
		case "@ib":
			err = eachLine(f.Data, func(line string) error { return addIBPort(dir, line) })
		case "@cpus":
			err = addCPUs(dir, f.Data)
		case "@governor":
			err = eachLine(f.Data, func(line string) error { return setGovernor(dir, line) })
		case "@bench":
			err = eachLine(f.Data, func(line string) error { return addBench(dir, line) })
		case FaultsSection:
			var fs []DeviceFault
			fs, err = ParseFaults(f.Data)
			*faults = append(*faults, fs...)
		case "@remove":
			err = eachLine(f.Data, func(line string) error {
				p, err := inRoot(dir, line)
				if err != nil {
					return err
				}
				return os.RemoveAll(p)
			})
		default:
			err = fmt.Errorf("unknown section %s", f.Name)
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", name, f.Name, err)
		}
	}
	return nil
}

// inRoot joins a slash path from an archive to dir, refusing anything that
// would land outside it.
func inRoot(dir, p string) (string, error) {
	clean := path.Clean("/" + p)
	if clean == "/" || strings.Contains(p, "..") {
		return "", fmt.Errorf("bad path %q", p)
	}
	return filepath.Join(dir, filepath.FromSlash(clean)), nil
}

func writeFile(p string, data []byte) error {
	// Try the write first: most files land in a directory that exists, and
	// MkdirAll on a deep sysfs path costs a stat per component.
	err := os.WriteFile(p, data, 0o644)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

func eachLine(data []byte, fn func(string) error) error {
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := fn(line); err != nil {
			return fmt.Errorf("%q: %w", line, err)
		}
	}
	return sc.Err()
}

// addLink reads "PATH -> TARGET" and creates the symlink; TARGET is kept as
// written (relative targets resolve inside the root, as on the real node).
func addLink(dir, line string) error {
	from, to, ok := strings.Cut(line, " -> ")
	if !ok {
		return errors.New("want PATH -> TARGET")
	}
	p, err := inRoot(dir, strings.TrimSpace(from))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	os.Remove(p)
	return os.Symlink(strings.TrimSpace(to), p)
}

// fields splits "key=value key="quoted value"" into a map; the first word
// without '=' is returned as the head.
func fields(line string) (head string, kv map[string]string, err error) {
	kv = map[string]string{}
	for line = strings.TrimSpace(line); line != ""; line = strings.TrimSpace(line) {
		var word string
		end := strings.IndexAny(line, " \t")
		if eq := strings.IndexByte(line, '='); eq >= 0 && (end < 0 || eq < end) && eq+1 < len(line) && line[eq+1] == '"' {
			close := strings.IndexByte(line[eq+2:], '"')
			if close < 0 {
				return "", nil, errors.New("unclosed quote")
			}
			word = line[:eq+2+close+1]
		} else if end < 0 {
			word = line
		} else {
			word = line[:end]
		}
		line = line[len(word):]
		k, v, ok := strings.Cut(word, "=")
		if !ok {
			if head != "" {
				return "", nil, fmt.Errorf("unexpected word %q", word)
			}
			head = word
			continue
		}
		kv[k] = strings.Trim(v, `"`)
	}
	return head, kv, nil
}

// addPCI models one PCI function the way Linux lays it out: a directory
// under /sys/devices/pciDDDD:BB/<bridge>/…/<function> with attribute files,
// a /sys/bus/pci/devices/<function> symlink to it, a driver symlink, and
// net/ and infiniband/ entries (with /sys/class links) for NICs.
//
//	pci0000:17/0000:17:01.0/0000:18:00.0 class=0x020700 vendor=0x15b3 … net=ibp24s0 ib=mlx5_0 fw=28.43.1014
//
// fw= is the RDMA device's firmware (infiniband/<ib>/fw_ver).
func addPCI(dir, line string) error {
	devPath, kv, err := fields(line)
	if err != nil {
		return err
	}
	parts := strings.Split(devPath, "/")
	addr := parts[len(parts)-1]
	if len(parts) < 2 || !strings.HasPrefix(parts[0], "pci") {
		return errors.New("path must start at a host bridge (pciDDDD:BB)")
	}
	sysDev := "sys/devices/" + devPath
	base, err := inRoot(dir, sysDev)
	if err != nil {
		return err
	}
	attrs := map[string]string{
		"class": "class", "vendor": "vendor", "device": "device",
		"subsystem_vendor": "subsystem_vendor", "subsystem_device": "subsystem_device",
		"numa": "numa_node", "speed": "current_link_speed", "max_speed": "max_link_speed",
		"width": "current_link_width", "max_width": "max_link_width",
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return err
	}
	for k, v := range kv {
		switch k {
		case "driver", "net", "ib", "irqs", "irq_cpus", "mtu", "fw":
			continue
		}
		file, ok := attrs[k]
		if !ok {
			return fmt.Errorf("unknown attribute %q", k)
		}
		if err := writeFile(filepath.Join(base, file), []byte(v+"\n")); err != nil {
			return err
		}
	}
	// /sys/bus/pci/devices/X -> ../../../devices/<devPath>
	if err := addLink(dir, "sys/bus/pci/devices/"+addr+" -> ../../../devices/"+devPath); err != nil {
		return err
	}
	// From sys/devices/<parts> up to sys/, as the kernel links it
	// (../../../bus/pci/drivers/i915 for sys/devices/pci0000:00/0000:00:02.0).
	up := strings.Repeat("../", len(parts)+1)
	if d := kv["driver"]; d != "" {
		// The driver's directory exists on a real node; a dangling link
		// would also cost the probe a readlink fork per device.
		if err := os.MkdirAll(filepath.Join(dir, "sys/bus/pci/drivers", d), 0o755); err != nil {
			return err
		}
		if err := addLink(dir, sysDev+"/driver -> "+up+"bus/pci/drivers/"+d); err != nil {
			return err
		}
	}
	for _, n := range splitList(kv["net"]) {
		if err := os.MkdirAll(filepath.Join(base, "net", n), 0o755); err != nil {
			return err
		}
		if m := kv["mtu"]; m != "" {
			if err := writeFile(filepath.Join(base, "net", n, "mtu"), []byte(m+"\n")); err != nil {
				return err
			}
		}
		if err := addLink(dir, "sys/class/net/"+n+" -> ../../devices/"+devPath+"/net/"+n); err != nil {
			return err
		}
	}
	if err := addIRQs(dir, base, kv["irqs"], kv["irq_cpus"]); err != nil {
		return err
	}
	for _, ib := range splitList(kv["ib"]) {
		if err := os.MkdirAll(filepath.Join(base, "infiniband", ib, "ports"), 0o755); err != nil {
			return err
		}
		if err := addLink(dir, sysDev+"/infiniband/"+ib+"/device -> ../../../"+addr); err != nil {
			return err
		}
		if fw := kv["fw"]; fw != "" {
			if err := writeFile(filepath.Join(base, "infiniband", ib, "fw_ver"), []byte(fw+"\n")); err != nil {
				return err
			}
		}
		if err := addLink(dir, "sys/class/infiniband/"+ib+" -> ../../devices/"+devPath+"/infiniband/"+ib); err != nil {
			return err
		}
	}
	return nil
}

// addIRQs gives a function the MSI-X interrupts FIRST-LAST (irqs=):
// msi_irqs/N as sysfs lists them, and /proc/irq/N/smp_affinity_list set
// to cpus (irq_cpus=), the CPUs each may run on.
func addIRQs(dir, base, irqs, cpus string) error {
	if irqs == "" {
		return nil
	}
	lo, hi, ok := strings.Cut(irqs, "-")
	first, err1 := strconv.Atoi(lo)
	last, err2 := strconv.Atoi(hi)
	if !ok || err1 != nil || err2 != nil || first < 0 || last < first || last-first > 4096 || cpus == "" {
		return fmt.Errorf("irqs=%q irq_cpus=%q: want irqs=FIRST-LAST irq_cpus=LIST", irqs, cpus)
	}
	for n := first; n <= last; n++ {
		if err := writeFile(filepath.Join(base, "msi_irqs", strconv.Itoa(n)), []byte("msix\n")); err != nil {
			return err
		}
		p, err := inRoot(dir, "proc/irq/"+strconv.Itoa(n)+"/smp_affinity_list")
		if err != nil {
			return err
		}
		if err := writeFile(p, []byte(cpus+"\n")); err != nil {
			return err
		}
	}
	return nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// addIBPort writes one RDMA port's attributes:
//
//	mlx5_0 port=1 link_layer=InfiniBand rate="400 Gb/sec (4X NDR)" state="4: ACTIVE" phys_state="5: LinkUp"
func addIBPort(dir, line string) error {
	dev, kv, err := fields(line)
	if err != nil {
		return err
	}
	if !validName(dev) || kv["port"] == "" {
		return errors.New("want DEVICE port=N …")
	}
	link := filepath.Join(dir, "sys", "class", "infiniband", dev)
	target, err := os.Readlink(link)
	if err != nil {
		return fmt.Errorf("RDMA device %s not declared by an @pci ib= entry", dev)
	}
	portDir := filepath.Join(filepath.Dir(link), target, "ports", kv["port"])
	for _, a := range []string{"link_layer", "rate", "state", "phys_state"} {
		if v, ok := kv[a]; ok {
			if err := writeFile(filepath.Join(portDir, a), []byte(v+"\n")); err != nil {
				return err
			}
		}
	}
	return nil
}

// addCPUs writes per-CPU sysfs entries and /proc/cpuinfo from an @cpus
// section, one line per socket:
//
//	socket=0 cpus=0-55,112-167 model="Intel(R) Xeon(R) Platinum 8480C"
//	socket=0 cpus=0-71 implementer=0x41 part=0xd4f governor=performance
//
// governor= sets the cpufreq governor (an @governor section in a profile
// overrides it).
// cpuinfo carries only the fields the probe reads (processor, model name,
// physical id; CPU implementer/part for Arm, whose cpuinfo has no model
// name or physical id and whose package comes from sysfs topology).
func addCPUs(dir string, data []byte) error {
	entries := map[int]string{}
	err := eachLine(data, func(line string) error {
		_, kv, err := fields(line)
		if err != nil {
			return err
		}
		cpus, err := cpulist.Parse(kv["cpus"])
		if err != nil {
			return err
		}
		if _, err := strconv.Atoi(kv["socket"]); err != nil {
			return errors.New("want socket=N")
		}
		for _, c := range cpus {
			cdir := filepath.Join(dir, "sys", "devices", "system", "cpu", "cpu"+strconv.Itoa(c))
			var entry strings.Builder
			fmt.Fprintf(&entry, "processor\t: %d\n", c)
			// x86 cpuinfo names the package; only Arm needs sysfs topology.
			if v := kv["vendor"]; v != "" {
				// x86 identification as cpuinfo prints it; family and
				// model numbers only where a source gives them.
				fmt.Fprintf(&entry, "vendor_id\t: %s\n", v)
				if kv["family"] != "" {
					fmt.Fprintf(&entry, "cpu family\t: %s\nmodel\t\t: %s\n", kv["family"], kv["model_id"])
				}
			}
			if m := kv["model"]; m != "" {
				fmt.Fprintf(&entry, "model name\t: %s\nphysical id\t: %s\n", m, kv["socket"])
			} else {
				fmt.Fprintf(&entry, "CPU implementer\t: %s\nCPU part\t: %s\n", kv["implementer"], kv["part"])
			}
			entries[c] = entry.String() + "\n"
			if g := kv["governor"]; g != "" {
				if err := writeFile(filepath.Join(cdir, "cpufreq", "scaling_governor"), []byte(g+"\n")); err != nil {
					return err
				}
			}
			if kv["model"] != "" {
				continue
			}
			if err := writeFile(filepath.Join(cdir, "topology", "physical_package_id"), []byte(kv["socket"]+"\n")); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	ids := make([]int, 0, len(entries))
	for c := range entries {
		ids = append(ids, c)
	}
	sort.Ints(ids)
	var all strings.Builder
	for _, c := range ids {
		all.WriteString(entries[c])
	}
	return writeFile(filepath.Join(dir, "proc", "cpuinfo"), []byte(all.String()))
}

// setGovernor writes the cpufreq scaling governor of every online CPU
// (sys/devices/system/cpu/online, which the hardware layer provides).
func setGovernor(dir, governor string) error {
	if !validName(governor) {
		return fmt.Errorf("bad governor %q", governor)
	}
	online, err := os.ReadFile(filepath.Join(dir, "sys", "devices", "system", "cpu", "online"))
	if err != nil {
		return fmt.Errorf("no online CPU list in the @base layer: %w", err)
	}
	cpus, err := cpulist.Parse(string(online))
	if err != nil {
		return err
	}
	for _, c := range cpus {
		p := filepath.Join(dir, "sys", "devices", "system", "cpu", "cpu"+strconv.Itoa(c), "cpufreq", "scaling_governor")
		if err := writeFile(p, []byte(governor+"\n")); err != nil {
			return err
		}
	}
	return nil
}

// Transport runs commands against a simulated root.
type Transport struct {
	inner *local.Transport
	root  string
}

// New returns a transport for host whose commands run locally with
// GPUFORM_ROOT=root and the root's stand-ins first on PATH. Become is
// ignored: the simulated node belongs to the user running gpuform. root
// must come from Materialize, which checked that gpuform made it.
func New(host, root string) *Transport {
	env := map[string]string{
		"GPUFORM_ROOT": root,
		"GPUFORM_SIM":  "1",
		"PATH":         filepath.Join(root, filepath.FromSlash(BinDir)) + string(os.PathListSeparator) + absolutePath(os.Getenv("PATH")),
	}
	return &Transport{inner: local.New(host, local.WithEnv(env)), root: root}
}

// absolutePath drops the empty and relative entries of a PATH value: they
// name the working directory, which may be a spec directory, and nothing
// found there may run as a simulated node's tool.
func absolutePath(path string) string {
	var keep []string
	for _, d := range filepath.SplitList(path) {
		if filepath.IsAbs(d) {
			keep = append(keep, d)
		}
	}
	return strings.Join(keep, string(os.PathListSeparator))
}

// Host returns the inventory name given to New.
func (t *Transport) Host() string { return t.inner.Host() }

// Root returns the simulated root directory.
func (t *Transport) Root() string { return t.root }

// Run runs cmd against the simulated root.
func (t *Transport) Run(ctx context.Context, cmd transport.Command) (transport.Result, error) {
	cmd.Become = false
	if _, ok := cmd.Env["GPUFORM_ROOT"]; ok {
		// The root is the simulated node's identity; a caller asking for
		// another root prefix gets it under the simulated root.
		env := map[string]string{}
		for k, v := range cmd.Env {
			env[k] = v
		}
		env["GPUFORM_ROOT"] = filepath.Join(t.root, filepath.FromSlash(path.Clean("/"+cmd.Env["GPUFORM_ROOT"])))
		cmd.Env = env
	}
	return t.inner.Run(ctx, cmd)
}

// NVMLMock offers transport.NVMLMocker: a simulated node answers NVML
// from the go-nvml mock of its hardware, while its root has a driver
// loaded, as a real node would.
func (t *Transport) NVMLMock() (transport.NVMLMock, error) {
	profile, _, _ := ParseHost(t.Host())
	system, ok := mockSystem(profile)
	if !ok {
		return transport.NVMLMock{}, fmt.Errorf("no simulated NVML for profile %q", profile)
	}
	// A node that cannot run the NVML agent is read through nvidia-smi,
	// as verify reads such a real node.
	if b, err := os.ReadFile(filepath.Join(t.root, NoNVMLAgentFile)); err == nil {
		why := strings.TrimSpace(string(b))
		if why == "" {
			why = "the node cannot run the NVML agent"
		}
		return transport.NVMLMock{}, fmt.Errorf("%w: %s (%s)", transport.ErrNoNVMLAgent, why, NoNVMLAgentFile)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return transport.NVMLMock{}, err
	}
	m := transport.NVMLMock{System: system, FollowsDriver: true, Root: t.root}
	// A profile's hardware faults (a GPU off the bus) are planted in its
	// mock; the file is part of the profile, like its sysfs.
	if b, err := os.ReadFile(filepath.Join(t.root, NVMLFaultsFile)); err == nil {
		m.Faults = strings.Fields(string(b))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return transport.NVMLMock{}, err
	}
	return m, nil
}

// Close does nothing; it exists to satisfy transport.Transport.
func (t *Transport) Close() error { return nil }
