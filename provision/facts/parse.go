package facts

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gpuform/gpuform/internal/cpulist"
	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/internal/readlimit"
	"github.com/gpuform/gpuform/internal/text"
	"go.yaml.in/yaml/v3"
)

// ErrNotProbeOutput means the output does not start with the probe's header:
// the script did not run (wrong shell, missing sh) or something else answered.
var ErrNotProbeOutput = errors.New("not gpuform probe output")

// ErrTruncated means the probe output stops before its end marker: the
// connection dropped or the probe was killed mid-way.
var ErrTruncated = errors.New("probe output truncated")

// ErrGarbled means the probe output has text where a record marker belongs.
var ErrGarbled = errors.New("probe output garbled")

// probeHeader starts the first line of probe output; the format version
// follows it.
const probeHeader = "@@gpuform-probe "

// probeFormat is the output format this parser reads.
const probeFormat = "v1"

// requiredPaths must each be reported by the probe, as a file or as
// missing. A stream that ends properly but lacks one of them came from a
// different probe version or was edited, and is refused rather than read as
// a node without those facts.
var requiredPaths = []string{
	"/proc/sys/kernel/osrelease",
	"/proc/cmdline",
	"/proc/driver/nvidia/version",
	"/proc/modules",
	"/proc/meminfo",
	"/proc/cpuinfo",
	"/var/lib/dpkg/status",
	"/etc/docker/daemon.json",
}

// requiredReads are the requiredPaths the probe reads only because a
// resource declares them (facts.Reads): Probe refuses declarations
// without them, so that a caller that passed no resource.Reads() fails
// before it runs anything rather than reading a node without them.
var requiredReads = []string{"/etc/docker/daemon.json"}

// cmdOutput is the recorded result of a command the probe ran.
type cmdOutput struct {
	rc  int
	out string
}

// rawFacts is the probe output split into records, before interpretation.
type rawFacts struct {
	root    string
	files   map[string]string
	missing map[string]bool
	links   map[string]string
	exists  map[string]bool
	cmds    map[string]cmdOutput
	managed []string
	// units are the systemd units the probe watched (its unit records),
	// in the order it read them.
	units []string
	// unreadable are the paths that exist but the probe could not read.
	unreadable []string
	// configs are the paths read byte-exact (read_config in probe.sh), with what
	// was recorded about them besides their bytes.
	configs map[string]*ConfigFile
	// errors are the paths that could not be resolved, and why.
	errors map[string]string
	// names are listings (find) keyed by the directory listed.
	names map[string][]string
}

// Parse reads the output of the facts probe into a Node. Output that is not
// from the probe, is truncated, or is garbled yields an error wrapping
// ErrNotProbeOutput, ErrTruncated or ErrGarbled; problems confined to one
// file (a broken daemon.json) become Node.Warnings instead.
func Parse(output []byte) (*Node, error) {
	if err := checkOutputSize(output); err != nil {
		return nil, err
	}
	raw, err := split(output)
	if err != nil {
		return nil, err
	}
	for _, p := range requiredPaths {
		if _, ok := raw.files[p]; !ok && !raw.missing[p] {
			return nil, fmt.Errorf("%w: no record for %s (probe and parser versions differ?)", ErrGarbled, p)
		}
	}
	if _, ok := raw.files["/etc/os-release"]; !ok && !raw.missing["/etc/os-release"] {
		return nil, fmt.Errorf("%w: no record for /etc/os-release", ErrGarbled)
	}
	return interpret(raw), nil
}

// split cuts the output into records.
func split(out []byte) (*rawFacts, error) { return splitStream(out, false) }

// splitStream is split; compressed says out is what a gzip header line
// announced, which may not announce another.
func splitStream(out []byte, compressed bool) (*rawFacts, error) {
	start := findLine(out, probeHeader)
	if start < 0 {
		// An rc file's last message without its newline ("Welcome")
		// puts the header mid-line; nothing the probe prints comes
		// before the header, so its first occurrence is it.
		start = bytes.Index(out, []byte(probeHeader))
	}
	if start < 0 {
		return nil, fmt.Errorf("%w (starts with %s)", ErrNotProbeOutput, preview(out))
	}
	first, rest := cutLine(out[start:])
	fields := strings.Fields(string(first))
	if len(fields) == 4 && fields[2] == "gzip" && fields[1] == probeFormat && !compressed {
		// stream.sh: the records follow compressed.
		if !isNonce(fields[3]) {
			return nil, fmt.Errorf("%w: bad nonce in header %s", ErrNotProbeOutput, preview(first))
		}
		plain, err := gunzip(rest)
		if err != nil {
			return nil, err
		}
		if !bytes.HasPrefix(plain, []byte(probeHeader+probeFormat+" begin "+fields[3]+"\n")) {
			return nil, fmt.Errorf("%w: the compressed stream does not start with the header of nonce %s (starts with %s)", ErrGarbled, fields[3], preview(plain))
		}
		return splitStream(plain, true)
	}
	if len(fields) != 4 || fields[2] != "begin" {
		return nil, fmt.Errorf("%w: bad header line %s", ErrNotProbeOutput, preview(first))
	}
	if fields[1] != probeFormat {
		return nil, fmt.Errorf("%w: probe output format %q, this gpuform reads %q", ErrNotProbeOutput, fields[1], probeFormat)
	}
	nonce := fields[3]
	if !isNonce(nonce) {
		return nil, fmt.Errorf("%w: bad nonce in header %s", ErrNotProbeOutput, preview(first))
	}
	marker := "@@" + nonce + " "
	eof := []byte("\n@@" + nonce + " eof\n")
	raw := &rawFacts{
		files:   map[string]string{},
		missing: map[string]bool{},
		links:   map[string]string{},
		exists:  map[string]bool{},
		cmds:    map[string]cmdOutput{},
		configs: map[string]*ConfigFile{},
		errors:  map[string]string{},
		names:   map[string][]string{},
	}
	consumed := len(out) - len(rest)
	for {
		if len(rest) == 0 {
			return nil, fmt.Errorf("%w after %d bytes: no end marker", ErrTruncated, consumed)
		}
		line, after := cutLine(rest)
		if !bytes.HasPrefix(line, []byte(marker)) {
			return nil, fmt.Errorf("%w at byte %d: expected a record marker, got %s", ErrGarbled, consumed, preview(line))
		}
		kind, arg, _ := strings.Cut(string(line[len(marker):]), " ")
		switch kind {
		case "end":
			return raw, nil
		case "root":
			raw.root = arg
		case "missing":
			raw.missing[arg] = true
		case "unreadable":
			// Read as missing by every fact, except that a warning says so
			// and files gpuform would rewrite are marked (see docker).
			raw.missing[arg] = true
			raw.unreadable = append(raw.unreadable, arg)
		case "exists":
			raw.exists[arg] = true
		case "managed":
			raw.managed = append(raw.managed, arg)
		case "unit":
			raw.units = append(raw.units, arg)
		case "config":
			raw.configs[arg] = &ConfigFile{}
		case "error", "resolved", "meta":
			value, next := cutLine(after)
			if len(after) == 0 {
				return nil, fmt.Errorf("%w after %d bytes: %s %s has no value", ErrTruncated, consumed, kind, arg)
			}
			after = next
			cf := raw.configs[arg]
			switch kind {
			case "error":
				raw.missing[arg] = true
				delete(raw.files, arg)
				raw.errors[arg] = string(value)
			case "resolved":
				if cf == nil {
					return nil, fmt.Errorf("%w at byte %d: %s outside a config record", ErrGarbled, consumed, preview(line))
				}
				cf.Resolved = string(value)
			case "meta":
				if cf == nil {
					return nil, fmt.Errorf("%w at byte %d: %s outside a config record", ErrGarbled, consumed, preview(line))
				}
				if err := cf.setMeta(string(value)); err != nil {
					return nil, fmt.Errorf("%w at byte %d: %s: %v", ErrGarbled, consumed, arg, err)
				}
			}
		case "pair":
			// Two config files' bytes in one od (probe.sh config_pair):
			// the first's, the line "@@<nonce> next", the second's. The
			// nonce is in no file, so the line is there exactly once.
			first, second, named := strings.Cut(arg, " ")
			body, next, ok := cutBody(after, eof)
			if !ok {
				return nil, fmt.Errorf("%w after %d bytes: pair %s has no eof marker", ErrTruncated, consumed, arg)
			}
			after = next
			if !named || first == "" || second == "" || strings.Contains(second, " ") {
				return nil, fmt.Errorf("%w at byte %d: pair record names no two paths: %s", ErrGarbled, consumed, preview(line))
			}
			data, err := decodeHex(body)
			if err != nil {
				return nil, fmt.Errorf("%w at byte %d: data of %s and %s: %v", ErrGarbled, consumed, first, second, err)
			}
			sep := []byte(marker[:len(marker)-1] + " next\n")
			a, b, found := bytes.Cut(data, sep)
			if !found || bytes.Contains(b, sep) {
				return nil, fmt.Errorf("%w at byte %d: the data of %s and %s is not cut once by its separator line", ErrGarbled, consumed, first, second)
			}
			raw.files[first] = string(a)
			raw.files[second] = string(b)
		case "data", "names":
			body, next, ok := cutBody(after, eof)
			if !ok {
				return nil, fmt.Errorf("%w after %d bytes: %s %s has no eof marker", ErrTruncated, consumed, kind, arg)
			}
			after = next
			if kind == "names" {
				raw.names[arg] = strings.Split(strings.TrimSpace(string(body)), "\n")
				break
			}
			data, err := decodeHex(body)
			if err != nil {
				return nil, fmt.Errorf("%w at byte %d: data of %s: %v", ErrGarbled, consumed, arg, err)
			}
			raw.files[arg] = string(data)
		case "link":
			target, next := cutLine(after)
			if len(after) == 0 {
				return nil, fmt.Errorf("%w after %d bytes: link %s has no target", ErrTruncated, consumed, arg)
			}
			raw.links[arg] = string(target)
			after = next
		case "file", "cmd":
			// after starts with the body; the record ends at "\n<marker> eof\n".
			// The probe always writes the newline before the eof marker, so
			// an empty body is "\n" followed directly by the marker.
			body, next, ok := cutBody(after, eof)
			if !ok {
				return nil, fmt.Errorf("%w after %d bytes: %s %s has no eof marker", ErrTruncated, consumed, kind, arg)
			}
			if kind == "file" {
				raw.files[arg] = string(body)
			} else {
				name, rcText, _ := strings.Cut(arg, " ")
				rc, err := strconv.Atoi(rcText)
				if err != nil {
					return nil, fmt.Errorf("%w at byte %d: bad exit status in %s", ErrGarbled, consumed, preview(line))
				}
				raw.cmds[name] = cmdOutput{rc: rc, out: string(body)}
			}
			after = next
		default:
			return nil, fmt.Errorf("%w at byte %d: unknown record %s", ErrGarbled, consumed, preview(line))
		}
		consumed += len(rest) - len(after)
		rest = after
	}
}

// gunzip decompresses the probe's compressed stream, at most MaxOutput
// bytes of it: a node must not make the controller inflate gigabytes.
func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%w: compressed stream: %v", ErrTruncated, err)
	}
	zr.Multistream(false)
	var out bytes.Buffer
	// gzip's trailer holds the size (mod 4 GiB): a hint for one buffer
	// instead of doublings, trusted no further than MaxOutput.
	if len(b) >= 4 {
		if hint := int(binary.LittleEndian.Uint32(b[len(b)-4:])); hint <= MaxOutput {
			out.Grow(hint + bytes.MinRead)
		}
	}
	n, err := out.ReadFrom(io.LimitReader(zr, MaxOutput+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: compressed stream after %d bytes: %v", ErrTruncated, n, err)
	case n > MaxOutput:
		return nil, fmt.Errorf("%w: probe output exceeds the limit of %s once decompressed", ErrGarbled, readlimit.FormatSize(MaxOutput))
	}
	return out.Bytes(), nil
}

// cutBody splits b at the first eof marker; the newline that precedes the
// marker belongs to the marker. A body may also be empty, "\n<marker>".
func cutBody(b, eof []byte) (body, rest []byte, ok bool) {
	if bytes.HasPrefix(b, eof[1:]) {
		return nil, b[len(eof)-1:], true
	}
	i := bytes.Index(b, eof)
	if i < 0 {
		return nil, nil, false
	}
	return b[:i], b[i+len(eof):], true
}

// decodeHex reads od -An -v -tx1 output: lines of blank-separated
// two-digit hex bytes.
func decodeHex(b []byte) ([]byte, error) {
	out := make([]byte, 0, len(b)/3+1)
	for _, f := range bytes.Fields(b) {
		if len(f) != 2 {
			return nil, fmt.Errorf("%s is not a hex byte", preview(f))
		}
		var v [1]byte
		if _, err := hex.Decode(v[:], f); err != nil {
			return nil, fmt.Errorf("%s is not a hex byte", preview(f))
		}
		out = append(out, v[0])
	}
	return out, nil
}

// findLine returns the offset of the first line that starts with prefix, or
// -1. Text before it (a login banner) is ignored.
func findLine(b []byte, prefix string) int {
	off := 0
	for off <= len(b) {
		if bytes.HasPrefix(b[off:], []byte(prefix)) {
			return off
		}
		i := bytes.IndexByte(b[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	return -1
}

// cutLine returns the first line of b without its newline, and the rest.
func cutLine(b []byte) (line, rest []byte) {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i], b[i+1:]
	}
	return b, nil
}

func isNonce(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// preview quotes the start of b for an error message.
func preview(b []byte) string {
	const max = 60
	if len(b) > max {
		b = b[:max]
		for len(b) > 0 && !utf8.Valid(b) {
			b = b[:len(b)-1]
		}
		return strconv.Quote(string(b)) + "…"
	}
	if len(b) == 0 {
		return "nothing"
	}
	return strconv.Quote(string(b))
}

// interpret turns records into a Node. It cannot fail: every file is
// optional, and a file that does not parse becomes a warning.
func interpret(raw *rawFacts) *Node {
	n := &Node{
		FormatVersion: jsonformat.Version,
		Root:          raw.root,
		Modules:       []string{},
		Packages:      Packages{Installed: map[string]Package{}},
		CUDAToolkits:  []CUDAToolkit{},
		Sysctls:       map[string]string{},
		Limits:        []LimitEntry{},
		Units:         map[string]UnitState{},
		NUMA:          []NUMANode{},
		PCI:           []PCIDevice{},
		RDMA:          []RDMADevice{},
		ManagedFiles:  map[string]File{},
		ConfigFiles:   map[string]ConfigFile{},
	}
	if n.Root == "" {
		n.Root = "/"
	}
	p := &interpreter{raw: raw, n: n}
	for _, path := range raw.unreadable {
		p.warnf("%s exists but cannot be read by the login user: its facts are unknown (set become on the host)", path)
	}
	for _, path := range slices.Sorted(maps.Keys(raw.errors)) {
		p.warnf("%s cannot be read: %s", path, raw.errors[path])
	}
	p.osRelease()
	p.identity()
	p.kernel()
	p.driver()
	p.modules()
	p.packages()
	p.archFromPackages()
	p.cuda()
	p.docker()
	p.containerRuntime()
	p.images()
	p.imageFiles()
	p.imageDirTrust()
	p.cdiSpecs()
	for _, path := range PyxisPluginPaths() {
		if p.raw.exists[path] {
			p.n.Existing = append(p.n.Existing, path)
		}
	}
	p.memory()
	p.shm()
	p.sysctls()
	p.limits()
	p.cpu()
	p.hypervisor()
	p.bios()
	p.bmc()
	p.fabric()
	p.imexStatus()
	p.numa()
	p.units()
	p.pci()
	p.rdma()
	p.grub()
	p.managed()
	p.configFiles()
	p.containerdImports()
	p.owners()
	if names, ok := raw.names["/proc/sys"]; ok {
		n.SysctlNames = sysctlNames(names)
	}
	if c, ok := raw.files["/etc/nccl.conf"]; ok {
		f := NewFile(c)
		n.NCCLConf = &f
	}
	_, n.PendingReboot = raw.files["/var/run/reboot-required"]
	return n
}

type interpreter struct {
	raw *rawFacts
	n   *Node
}

func (p *interpreter) warnf(format string, args ...any) {
	p.n.Warnings = append(p.n.Warnings, fmt.Sprintf(format, args...))
}

func (p *interpreter) file(path string) (string, bool) {
	s, ok := p.raw.files[path]
	return s, ok
}

// sortedFiles returns the recorded file paths with the given prefix and
// suffix, sorted.
func (p *interpreter) sortedFiles(prefix, suffix string) []string {
	var out []string
	for k := range p.raw.files {
		if strings.HasPrefix(k, prefix) && strings.HasSuffix(k, suffix) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func (p *interpreter) osRelease() {
	text, ok := p.file("/etc/os-release")
	if !ok {
		text, ok = p.file("/usr/lib/os-release")
	}
	if !ok {
		p.warnf("no /etc/os-release: distribution unknown")
		return
	}
	vars := parseShellAssignments(text)
	p.n.OS = OS{
		ID:        vars["ID"],
		IDLike:    strings.Fields(vars["ID_LIKE"]),
		VersionID: vars["VERSION_ID"],
		Pretty:    vars["PRETTY_NAME"],
	}
}

// identity reads the node's host name and machine id.
func (p *interpreter) identity() {
	for _, f := range []string{"/proc/sys/kernel/hostname", "/etc/hostname"} {
		if s, ok := p.file(f); ok && strings.TrimSpace(s) != "" {
			p.n.Hostname = strings.TrimSpace(s)
			break
		}
	}
	if s, ok := p.file("/etc/machine-id"); ok {
		p.n.MachineID = strings.TrimSpace(s)
	}
}

func (p *interpreter) kernel() {
	if s, ok := p.file("/proc/sys/kernel/osrelease"); ok {
		p.n.Kernel.Release = strings.TrimSpace(s)
	}
	p.n.Kernel.Cmdline = []string{}
	if s, ok := p.file("/proc/cmdline"); ok {
		p.n.Kernel.Cmdline = splitCmdline(s)
	}
	if s, ok := p.file("/proc/sys/kernel/arch"); ok {
		p.n.Arch = strings.TrimSpace(s)
	} else if c, ok := p.raw.cmds["uname-m"]; ok && c.rc == 0 {
		p.n.Arch = strings.TrimSpace(c.out)
	}
	if c, ok := p.raw.cmds["euid"]; ok && c.rc == 0 {
		if uid, err := strconv.Atoi(strings.TrimSpace(c.out)); err == nil && uid >= 0 {
			p.n.EUID = &uid
		}
	}
}

// archFromPackages fills Arch for an unpacked image, whose /proc is empty:
// the package manager's architecture of the installed packages says it.
func (p *interpreter) archFromPackages() {
	if p.n.Arch != "" {
		return
	}
	debian := map[string]string{"amd64": "x86_64", "arm64": "aarch64", "ppc64el": "ppc64le", "s390x": "s390x"}
	counts := map[string]int{}
	for _, pkg := range p.n.Packages.Installed {
		a := pkg.Arch
		if p.n.Packages.Manager == ManagerDpkg {
			a = debian[a]
		}
		if a != "" && a != "noarch" && a != "all" {
			counts[a]++
		}
	}
	best := ""
	for a, c := range counts {
		if best == "" || c > counts[best] || c == counts[best] && a < best {
			best = a
		}
	}
	if best == "" {
		p.warnf("architecture unknown: no /proc/sys/kernel/arch under the root and no package architecture")
		return
	}
	p.n.Arch = best
}

// splitCmdline splits a kernel command line into arguments. The kernel
// allows double quotes around values with spaces (param="a b"); they are
// kept out of the argument as the kernel does.
func splitCmdline(s string) []string {
	args := []string{}
	var cur strings.Builder
	inQuote, have := false, false
	for _, r := range s {
		switch {
		case r == '"':
			inQuote = !inQuote
			have = true
		case !inQuote && (r == ' ' || r == '\t' || r == '\n'):
			if have {
				args = append(args, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
			have = true
		}
	}
	if have {
		args = append(args, cur.String())
	}
	return args
}

func (p *interpreter) driver() {
	s, ok := p.file("/proc/driver/nvidia/version")
	if !ok {
		return
	}
	line, _, _ := strings.Cut(s, "\n")
	line = strings.TrimRight(line, " \r")
	d := &Driver{NVRM: line, Flavor: FlavorProprietary}
	// Open modules print "NVIDIA UNIX Open Kernel Module for x86_64  565.57.01"
	// and proprietary ones "NVIDIA UNIX x86_64 Kernel Module  535.129.03"
	// (https://github.com/nix-community/nixGL/issues/186).
	if strings.Contains(line, "Open Kernel Module") {
		d.Flavor = FlavorOpen
	}
	if _, after, ok := strings.Cut(line, "Kernel Module"); ok {
		for _, f := range strings.Fields(after) {
			if isDriverVersion(f) {
				d.Version = f
				break
			}
		}
	}
	if d.Version == "" {
		p.warnf("/proc/driver/nvidia/version: no driver version in %q", line)
	}
	p.n.Driver = d
}

// isDriverVersion accepts NVIDIA driver versions: two or three dot-separated
// numbers ("570.86.10", "560.35").
func isDriverVersion(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return false
	}
	for _, part := range parts {
		if part == "" {
			return false
		}
		for _, r := range part {
			if r < '0' || r > '9' {
				return false
			}
		}
	}
	return true
}

func (p *interpreter) modules() {
	s, ok := p.file("/proc/modules")
	if !ok {
		return
	}
	for _, line := range strings.Split(s, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			p.n.Modules = append(p.n.Modules, f[0])
		}
	}
	sort.Strings(p.n.Modules)
}

func (p *interpreter) packages() {
	pk := &p.n.Packages
	if s, ok := p.file("/var/lib/dpkg/status"); ok {
		pk.Manager = ManagerDpkg
		parseDpkgStatus(s, pk)
		// dpkg's journal of changes not yet folded into status, oldest
		// first (the file names are sequence numbers).
		for _, u := range p.sortedFiles("/var/lib/dpkg/updates/", "") {
			j, _ := p.file(u)
			parseDpkgStatus(j, pk)
		}
	}
	if s, ok := p.file("/var/lib/gpuform/apt-holds"); ok {
		pk.GpuformHolds = append(pk.GpuformHolds, strings.Fields(s)...)
		sort.Strings(pk.GpuformHolds)
	}
	if c, ok := p.raw.cmds["apt-candidates"]; ok && c.rc == 0 {
		parseAptCandidates(c.out, pk)
	}
	if c, ok := p.raw.cmds["offers"]; ok && c.rc == 0 {
		// The listing names the family it used (os-release's).
		o := &Offers{Versions: map[string][]string{}}
		parseOffers(c.out, nil, o)
		p.n.Offers = o
	}
	if s, ok := p.file("/etc/dnf/plugins/versionlock.list"); ok {
		for _, line := range strings.Split(s, "\n") {
			line = strings.TrimSpace(line)
			if line != "" && !strings.HasPrefix(line, "#") {
				pk.Locks = append(pk.Locks, line)
			}
		}
	}
	c, ok := p.raw.cmds["rpm"]
	if !ok {
		return
	}
	if c.rc != 0 {
		p.warnf("rpm -qa exited %d: %s", c.rc, text.FirstLine(c.out))
		return
	}
	if pk.Manager == ManagerDpkg && len(pk.Installed) > 0 {
		// A Debian system with the rpm tool installed: dpkg is the real database.
		return
	}
	pk.Manager = ManagerRPM
	for _, line := range strings.Split(c.out, "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 || f[0] == "" {
			continue
		}
		version := strings.TrimPrefix(f[1], "(none):")
		version = strings.TrimPrefix(version, "0:")
		pkg := Package{Version: version, Arch: f[2]}
		pkg.Held = rpmLocked(pk.Locks, f[0], version, f[2])
		pk.Installed[f[0]] = pkg
	}
}

// parseDpkgStatus adds the packages of a dpkg status file to pk. A package
// whose files are on disk counts whatever dpkg's state: one left unpacked or
// half-configured by an interrupted dpkg run is there (with State saying
// so), not absent; only "not-installed" and "config-files" (removed, its
// configuration kept) are absent.
func parseDpkgStatus(s string, pk *Packages) {
	for _, stanza := range strings.Split(s, "\n\n") {
		fields := map[string]string{}
		for _, line := range strings.Split(stanza, "\n") {
			k, v, ok := strings.Cut(line, ":")
			if ok {
				fields[k] = strings.TrimSpace(v)
			}
		}
		name := fields["Package"]
		status := strings.Fields(fields["Status"])
		if name == "" || len(status) != 3 {
			continue
		}
		if status[2] == "not-installed" || status[2] == "config-files" {
			// A journal entry can record a removal.
			delete(pk.Installed, name)
			continue
		}
		state := status[2]
		if state == "installed" {
			state = ""
		}
		pk.Installed[name] = Package{
			Version: fields["Version"],
			Arch:    fields["Architecture"],
			Held:    status[0] == "hold",
			State:   state,
		}
	}
}

// parseAptCandidates reads "name version" lines from apt's lists into
// pk.Available, each name's versions once, in the order apt lists them.
func parseAptCandidates(s string, pk *Packages) {
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		if pk.Available == nil {
			pk.Available = map[string][]string{}
		}
		if !slices.Contains(pk.Available[f[0]], f[1]) {
			pk.Available[f[0]] = append(pk.Available[f[0]], f[1])
		}
	}
}

// rpmLocked reports whether a dnf versionlock pattern holds the package.
// versionlock.list holds NEVRA globs ("nvidia-driver-3:550.54.15-1.el9.*");
// lines starting with "!" are exclusions, not locks.
func rpmLocked(locks []string, name, version, arch string) bool {
	epoch, evr := "0", version
	if e, rest, ok := strings.Cut(version, ":"); ok {
		epoch, evr = e, rest
	}
	candidates := []string{
		name,
		name + "-" + evr + "." + arch,
		name + "-" + epoch + ":" + evr + "." + arch,
		name + "-" + evr,
		name + "-" + epoch + ":" + evr,
	}
	for _, l := range locks {
		if strings.HasPrefix(l, "!") {
			continue
		}
		for _, c := range candidates {
			if ok, err := path.Match(l, c); err == nil && ok {
				return true
			}
		}
	}
	return false
}

func (p *interpreter) cuda() {
	def := ""
	if t, ok := p.raw.links["/usr/local/cuda"]; ok {
		// Ubuntu's cuda packages point /usr/local/cuda at the alternatives
		// system, which points at the selected toolkit.
		if !strings.HasPrefix(t, "/") {
			t = path.Join("/usr/local", t)
		}
		if t == "/etc/alternatives/cuda" {
			if t2, ok := p.raw.links[t]; ok {
				t = t2
			}
		}
		def = path.Clean(t)
	}
	for _, f := range p.sortedFiles("/usr/local/cuda", "/version.json") {
		dir := path.Dir(f)
		if _, isLink := p.raw.links[dir]; isLink {
			continue
		}
		v, err := cudaVersion(p.raw.files[f])
		if err != nil {
			p.warnf("%s: %v", f, err)
			continue
		}
		p.n.CUDAToolkits = append(p.n.CUDAToolkits, CUDAToolkit{Path: dir, Version: v, Default: dir == def || (def == "" && dir == "/usr/local/cuda")})
	}
}

func (p *interpreter) docker() {
	d := &p.n.Docker
	if slices.Contains(p.raw.unreadable, "/etc/docker/daemon.json") {
		// It exists: absent would let plan write a fresh one over it;
		// with Error set, plan refuses to touch it.
		d.Present = true
		d.Error = "exists but cannot be read by the login user (set become on the host)"
		return
	}
	s, ok := p.file("/etc/docker/daemon.json")
	if !ok {
		return
	}
	d.Present = true
	d.Raw = s
	if strings.TrimSpace(s) == "" {
		// dockerd treats an empty file as no configuration.
		d.Daemon = map[string]any{}
		return
	}
	m, err := decodeObject(s)
	if err == nil && !utf8.ValidString(s) {
		// encoding/json reads such bytes as U+FFFD: rewriting the file
		// would change text gpuform does not own.
		err = errors.New("not valid UTF-8 (JSON must be)")
	}
	if err != nil {
		d.Error = err.Error()
		p.warnf("/etc/docker/daemon.json: %v", err)
		return
	}
	d.Daemon = m
}

func (p *interpreter) containerRuntime() {
	s, ok := p.file("/etc/nvidia-container-runtime/config.toml")
	if !ok {
		return
	}
	p.n.ContainerRuntime = ContainerRuntime{Present: true, Raw: s, Keys: parseTOMLKeys(s)}
}

// libcudaRelease finds the driver release in a libcuda.so.<release> path.
var libcudaRelease = lazyre.New(`/libcuda\.so\.([0-9]+\.[0-9]+(?:\.[0-9]+)?)$`)

func (p *interpreter) cdiSpecs() {
	for _, path := range CDISpecPaths() {
		s, ok := p.file(path)
		if !ok {
			continue
		}
		if p.n.CDISpecs == nil {
			p.n.CDISpecs = map[string]CDISpec{}
		}
		p.n.CDISpecs[path] = parseCDISpec([]byte(s))
	}
}

// parseCDISpec reads the parts of a CDI specification verify and plan
// compare: its kind, devices and the driver release of the libraries it
// mounts (https://github.com/cncf-tags/container-device-interface/blob/main/SPEC.md).
func parseCDISpec(b []byte) CDISpec {
	type edits struct {
		Mounts []struct {
			HostPath string `yaml:"hostPath"`
		} `yaml:"mounts"`
	}
	var doc struct {
		Kind    string `yaml:"kind"`
		Devices []struct {
			Name           string `yaml:"name"`
			ContainerEdits edits  `yaml:"containerEdits"`
		} `yaml:"devices"`
		ContainerEdits edits `yaml:"containerEdits"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return CDISpec{Error: err.Error()}
	}
	out := CDISpec{Kind: doc.Kind}
	seen := map[string]bool{}
	all := []edits{doc.ContainerEdits}
	for _, d := range doc.Devices {
		out.Devices = append(out.Devices, d.Name)
		all = append(all, d.ContainerEdits)
	}
	for _, e := range all {
		for _, m := range e.Mounts {
			if v := libcudaRelease.FindStringSubmatch(m.HostPath); v != nil && !seen[v[1]] {
				seen[v[1]] = true
				out.DriverVersions = append(out.DriverVersions, v[1])
			}
		}
	}
	sort.Strings(out.DriverVersions)
	if out.Kind == "" {
		out.Error = "no kind: not a CDI specification"
	}
	return out
}

func (p *interpreter) memory() {
	s, _ := p.file("/proc/meminfo")
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		num, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			num *= 1024
		}
		switch k {
		case "MemTotal":
			p.n.MemoryBytes = num
		case "HugePages_Total":
			p.n.HugePages.Total = num
		case "HugePages_Free":
			p.n.HugePages.Free = num
		case "Hugepagesize":
			p.n.HugePages.PageSizeBytes = num
		}
	}
	if s, ok := p.file("/sys/kernel/mm/transparent_hugepage/enabled"); ok {
		// The selected mode is the bracketed word: "always [madvise] never".
		for _, w := range strings.Fields(s) {
			if strings.HasPrefix(w, "[") && strings.HasSuffix(w, "]") {
				p.n.HugePages.Transparent = strings.Trim(w, "[]")
			}
		}
	}
}

func (p *interpreter) shm() {
	s, _ := p.file("/proc/mounts")
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[1] != "/dev/shm" {
			continue
		}
		// The last mount of /dev/shm is the one in effect.
		sh := Shm{Mounted: true, Options: strings.Split(f[3], ",")}
		sh.SizeFromDefault = true
		for _, o := range sh.Options {
			if v, ok := strings.CutPrefix(o, "size="); ok {
				size, err := parseTmpfsSize(v, p.n.MemoryBytes)
				if err != nil {
					p.warnf("/proc/mounts: /dev/shm %v", err)
					continue
				}
				sh.SizeBytes, sh.SizeFromDefault = size, false
			}
		}
		if sh.SizeFromDefault {
			// tmpfs without size= gets half of RAM (Documentation/filesystems/tmpfs.rst).
			sh.SizeBytes = p.n.MemoryBytes / 2
		}
		p.n.Shm = sh
	}
	if s, ok := p.file("/etc/fstab"); ok {
		for _, line := range strings.Split(s, "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[1] == "/dev/shm" && !strings.HasPrefix(f[0], "#") {
				p.n.Shm.FstabLine = strings.Join(f, " ")
			}
		}
	}
}

// parseTmpfsSize reads a tmpfs size= value: bytes with an optional k, m, g,
// t suffix, or a percentage of RAM (as the kernel's tmpfs does).
func parseTmpfsSize(v string, mem uint64) (uint64, error) {
	if v == "" {
		return 0, errors.New("empty size=")
	}
	mult := uint64(1)
	num := v
	switch v[len(v)-1] {
	case 'k', 'K':
		mult, num = 1<<10, v[:len(v)-1]
	case 'm', 'M':
		mult, num = 1<<20, v[:len(v)-1]
	case 'g', 'G':
		mult, num = 1<<30, v[:len(v)-1]
	case 't', 'T':
		mult, num = 1<<40, v[:len(v)-1]
	case '%':
		pct, err := strconv.ParseUint(v[:len(v)-1], 10, 64)
		if err != nil || pct > 100 {
			return 0, fmt.Errorf("bad size=%s", v)
		}
		// Multiply before dividing, as the kernel does, without overflowing.
		return mem/100*pct + mem%100*pct/100, nil
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil || n > (1<<63)/mult {
		return 0, fmt.Errorf("bad size=%s", v)
	}
	return n * mult, nil
}

func (p *interpreter) sysctls() {
	for _, f := range p.sortedFiles("/proc/sys/", "") {
		name := strings.ReplaceAll(strings.TrimPrefix(f, "/proc/sys/"), "/", ".")
		if name == "kernel.osrelease" || name == "kernel.arch" {
			continue
		}
		// sysctl prints multi-value entries (tcp_rmem) tab-separated; one
		// space between values lets plan compare with what a spec says.
		p.n.Sysctls[name] = strings.Join(strings.Fields(p.raw.files[f]), " ")
	}
}

func (p *interpreter) limits() {
	files := []string{"/etc/security/limits.conf"}
	files = append(files, p.sortedFiles("/etc/security/limits.d/", ".conf")...)
	for _, f := range files {
		s, ok := p.file(f)
		if !ok {
			continue
		}
		for _, line := range strings.Split(s, "\n") {
			if i := strings.IndexByte(line, '#'); i >= 0 {
				line = line[:i]
			}
			fl := strings.Fields(line)
			if len(fl) < 4 {
				continue
			}
			p.n.Limits = append(p.n.Limits, LimitEntry{File: f, Domain: fl[0], Type: fl[1], Item: fl[2], Value: fl[3]})
		}
	}
}

func (p *interpreter) cpu() {
	c := &p.n.CPU
	s, _ := p.file("/proc/cpuinfo")
	processors := 0
	ids := map[string]bool{}
	implementer, part := "", ""
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			processors++
		case "model name":
			if c.Model == "" {
				c.Model = v
			}
		case "physical id":
			ids[v] = true
		case "vendor_id":
			if c.Vendor == "" {
				c.Vendor = v
			}
		case "cpu family":
			if c.Family == 0 {
				c.Family, _ = strconv.Atoi(v)
			}
		case "model":
			if c.ModelID == 0 {
				c.ModelID, _ = strconv.Atoi(v)
			}
		case "CPU implementer":
			if implementer == "" {
				implementer = v
			}
		case "CPU part":
			if part == "" {
				part = v
			}
		}
	}
	if c.Model == "" && implementer != "" {
		// Arm cpuinfo has no model name, only the implementer and part
		// codes from the MIDR register.
		c.Model = "ARM implementer " + implementer + " part " + part
	}
	for _, f := range p.sortedFiles("/sys/devices/system/cpu/cpu", "/topology/physical_package_id") {
		ids[strings.TrimSpace(p.raw.files[f])] = true
	}
	c.Sockets = len(ids)
	c.LogicalCPUs = processors
	if s, ok := p.file("/sys/devices/system/cpu/online"); ok {
		c.Online = strings.TrimSpace(s)
		if n, err := CountCPUList(c.Online); err == nil {
			c.LogicalCPUs = n
		} else {
			p.warnf("/sys/devices/system/cpu/online: %v", err)
		}
	}
	govs := map[string]bool{}
	for _, f := range p.sortedFiles("/sys/devices/system/cpu/cpu", "/cpufreq/scaling_governor") {
		if g := strings.TrimSpace(p.raw.files[f]); g != "" {
			govs[g] = true
		}
	}
	for g := range govs {
		c.Governors = append(c.Governors, g)
	}
	sort.Strings(c.Governors)
}

// hypervisor reads whether the node is a virtual machine: what
// systemd-detect-virt --vm said (exit 0 with a name; "none" exits 1), else
// a DMI system vendor or product that only hypervisors report (the ones
// systemd's own DMI table lists). A bare-metal cloud instance ("*.metal")
// is not one.
// bios reads the DMI BIOS version and date; a node with neither has no BIOS.
func (p *interpreter) bios() {
	version, _ := p.file("/sys/class/dmi/id/bios_version")
	date, _ := p.file("/sys/class/dmi/id/bios_date")
	b := BIOS{Version: strings.TrimSpace(version), Date: strings.TrimSpace(date)}
	if b != (BIOS{}) {
		p.n.BIOS = &b
	}
}

func (p *interpreter) hypervisor() {
	if c, ok := p.raw.cmds["detect-virt"]; ok {
		if name := strings.TrimSpace(c.out); c.rc == 0 && name != "" && name != "none" {
			p.n.Hypervisor = name
		}
		return
	}
	vendor, _ := p.file("/sys/class/dmi/id/sys_vendor")
	product, _ := p.file("/sys/class/dmi/id/product_name")
	vendor, product = strings.TrimSpace(vendor), strings.TrimSpace(product)
	if strings.HasSuffix(product, ".metal") {
		return
	}
	for _, hv := range []string{"QEMU", "KVM", "OpenStack", "KubeVirt", "Amazon EC2", "VMware", "innotek GmbH", "VirtualBox", "Xen", "Bochs", "Parallels", "BHYVE", "Google Compute Engine"} {
		if strings.HasPrefix(vendor, hv) || strings.HasPrefix(product, hv) {
			p.n.Hypervisor = "dmi:" + hv
			return
		}
	}
	// Hyper-V (Azure) reports Microsoft as the vendor and "Virtual
	// Machine" as the product; Microsoft's own hardware does not.
	if vendor == "Microsoft Corporation" && product == "Virtual Machine" {
		p.n.Hypervisor = "dmi:Microsoft Hyper-V"
	}
}

// CountCPUList returns the number of CPUs in a kernel cpulist ("0-55,112-167").
func CountCPUList(s string) (int, error) {
	cpus, err := cpulist.Parse(s)
	return len(cpus), err
}

func (p *interpreter) numa() {
	const base = "/sys/devices/system/node/node"
	for _, f := range p.sortedFiles(base, "/cpulist") {
		dir := path.Dir(f)
		id, err := strconv.Atoi(strings.TrimPrefix(dir, base))
		if err != nil {
			continue
		}
		nn := NUMANode{ID: id, CPUs: strings.TrimSpace(p.raw.files[f])}
		for _, d := range strings.Fields(p.raw.files[dir+"/distance"]) {
			if v, err := strconv.Atoi(d); err == nil {
				nn.Distances = append(nn.Distances, v)
			}
		}
		// "Node 0 MemTotal:       527988360 kB"
		if _, v, ok := strings.Cut(p.raw.files[dir+"/meminfo"], "MemTotal:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				if kb, err := strconv.ParseUint(f[0], 10, 64); err == nil {
					nn.MemoryBytes = kb * 1024
				}
			}
		}
		p.n.NUMA = append(p.n.NUMA, nn)
	}
	sort.Slice(p.n.NUMA, func(i, j int) bool { return p.n.NUMA[i].ID < p.n.NUMA[j].ID })
}

func (p *interpreter) units() {
	active := p.activeStates()
	listed, listing := p.unitFileStates()
	for _, u := range p.raw.units {
		c, asked := p.raw.cmds["is-enabled:"+u]
		if asked || listing != listingAbsent {
			st := UnitState{Enabled: "not-found", Active: "inactive"}
			switch {
			case asked:
				// systemctl is-enabled prints an error, not a state, for
				// a unit it does not know.
				if e := text.FirstLine(c.out); e != "" && !strings.Contains(e, " ") {
					st.Enabled = e
				}
			case listing == listingUnusable:
				st.Enabled = "unknown"
			case listed[u] != "":
				st.Enabled = listed[u]
			}
			if a, ok := active[u]; ok {
				st.Active = a
			}
			p.n.Units[u] = st
			continue
		}
		st := UnitState{Enabled: "not-found", Active: "inactive"}
		for _, dir := range []string{"/etc/systemd/system/", "/lib/systemd/system/", "/usr/lib/systemd/system/"} {
			if p.raw.exists[dir+u] {
				st.Enabled = "disabled"
			}
		}
		for k := range p.raw.exists {
			if strings.HasPrefix(k, "/etc/systemd/system/") && strings.HasSuffix(k, ".wants/"+u) {
				st.Enabled = "enabled"
			}
		}
		if p.raw.links["/etc/systemd/system/"+u] == "/dev/null" {
			st.Enabled = "masked"
		}
		if p.raw.exists["/run/systemd/units/invocation:"+u] {
			st.Active = "active"
		}
		p.n.Units[u] = st
	}
}

// systemdRunDir exists while systemd runs as PID 1 (sd_booted(3)); the
// probe records it missing instead of asking systemctl is-active.
const systemdRunDir = "/run/systemd/system"

// What the probe's `systemctl list-unit-files` record says.
const (
	listingAbsent   = iota // not asked: a root prefix, or no plain names
	listingRead            // the states of the names it lists
	listingUnusable        // a failure the probe could not fall back from
)

// unitFileStates maps each unit that the probe's one `systemctl
// list-unit-files --no-legend -- UNIT...` listed to its state, the second
// field of its line "NAME STATE [PRESET]": the states is-enabled prints.
// A name it does not list has no unit file. Exit 1 with no output is
// systemctl saying that none of the names has one. A listing that failed
// with a message made the probe ask is-enabled for each unit, whose
// records win; without them its units read as unknown. Lines that are
// not a watched unit and a one-word state (a warning) are skipped.
func (p *interpreter) unitFileStates() (map[string]string, int) {
	c, ok := p.raw.cmds["unit-files"]
	switch {
	case !ok:
		return nil, listingAbsent
	case c.rc == 1 && strings.TrimSpace(c.out) == "":
		return nil, listingRead
	case c.rc != 0:
		return nil, listingUnusable
	}
	watched := make(map[string]bool, len(p.raw.units))
	for _, u := range p.raw.units {
		watched[u] = true
	}
	out := make(map[string]string, len(p.raw.units))
	for line := range strings.Lines(c.out) {
		f := strings.Fields(line)
		if len(f) < 2 || !watched[f[0]] || !unitFileState(f[1]) {
			continue
		}
		out[f[0]] = f[1]
	}
	return out, listingRead
}

// unitFileState reports whether s can be a state systemctl prints:
// "enabled", "enabled-runtime", "masked", "static", … one word of
// lower-case letters and dashes.
func unitFileState(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '-') {
			return false
		}
	}
	return s != ""
}

// activeStates maps each unit to what the probe's one `systemctl
// is-active -- UNIT...` printed for it: systemctl prints one line a
// unit, in the order asked, which is the order of the unit records.
// Without a running systemd (a container) it prints an error sentence
// instead, once: every unit is then "unknown", as a state holding a space
// is. The probe does not ask where /run/systemd/system is missing, the
// test systemctl makes for a running systemd, and records that instead:
// every unit is "unknown" then too. Output that is not one line a unit
// cannot be told apart, so every unit is "unknown" too. No output, or an
// empty line, leaves the unit inactive.
func (p *interpreter) activeStates() map[string]string {
	c, ok := p.raw.cmds["is-active"]
	if !ok && p.raw.missing[systemdRunDir] {
		out := make(map[string]string, len(p.raw.units))
		for _, u := range p.raw.units {
			out[u] = "unknown"
		}
		return out
	}
	if !ok || c.out == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(c.out, "\n"), "\n")
	out := make(map[string]string, len(p.raw.units))
	for i, u := range p.raw.units {
		switch {
		case len(lines) != len(p.raw.units), strings.Contains(lines[i], " "):
			out[u] = "unknown"
		case lines[i] != "":
			out[u] = lines[i]
		}
	}
	return out
}

// pciAddress reports whether s looks like a PCI address "0000:1b:00.0".
func pciAddress(s string) bool {
	if len(s) != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.' {
		return false
	}
	for i, r := range s {
		if i == 4 || i == 7 || i == 10 {
			continue
		}
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

func (p *interpreter) pci() {
	const base = "/sys/bus/pci/devices/"
	for _, f := range p.sortedFiles(base, "/class") {
		dir := path.Dir(f)
		addr := strings.TrimPrefix(dir, base)
		if !pciAddress(addr) {
			continue
		}
		attr := func(name string) string { return strings.TrimSpace(p.raw.files[dir+"/"+name]) }
		d := PCIDevice{
			Address:          addr,
			Class:            attr("class"),
			Vendor:           attr("vendor"),
			Device:           attr("device"),
			SubsystemVendor:  attr("subsystem_vendor"),
			SubsystemDevice:  attr("subsystem_device"),
			NUMANode:         -1,
			CurrentLinkSpeed: attr("current_link_speed"),
			MaxLinkSpeed:     attr("max_link_speed"),
			Parents:          []string{},
		}
		switch {
		case (strings.HasPrefix(d.Class, "0x0300") || strings.HasPrefix(d.Class, "0x0302")) && d.Vendor == VendorNVIDIA:
			d.Kind = KindGPU
		case strings.HasPrefix(d.Class, "0x0300"), strings.HasPrefix(d.Class, "0x0302"):
			// A BMC's VGA (ASPEED on most GPU servers) is a display, not a GPU.
			d.Kind = KindDisplay
		case strings.HasPrefix(d.Class, "0x0207"):
			d.Kind = KindInfiniBand
		case strings.HasPrefix(d.Class, "0x0200"):
			d.Kind = KindEthernet
		case strings.HasPrefix(d.Class, "0x0108"):
			d.Kind = KindNVMe
		case strings.HasPrefix(d.Class, "0x0680") && d.Vendor == VendorNVIDIA:
			d.Kind = KindNVSwitch
		default:
			continue
		}
		if v, err := strconv.Atoi(attr("numa_node")); err == nil {
			d.NUMANode = v
		}
		d.CurrentLinkWidth, _ = strconv.Atoi(attr("current_link_width"))
		d.MaxLinkWidth, _ = strconv.Atoi(attr("max_link_width"))
		upstream := ""
		if t, ok := p.raw.links[dir]; ok {
			d.Parents = pciParents(t, addr)
			// The upstream port, whose maxima the probe reads beside the
			// device in /sys/devices for RDMA NICs.
			up := t
			if !path.IsAbs(up) {
				up = path.Join(path.Dir(dir), up)
			}
			if up = path.Dir(up); len(d.Parents) > 0 && path.Base(up) == d.Parents[len(d.Parents)-1] {
				upstream = up
			}
		}
		if t, ok := p.raw.links[dir+"/driver"]; ok {
			d.Driver = path.Base(t)
		}
		// The prefixes are made once per device, not once per entry: a
		// node has hundreds of exists records and dozens of devices.
		netDir, ibDir, irqDir := dir+"/net/", dir+"/infiniband/", dir+"/msi_irqs/"
		for k := range p.raw.exists {
			if !strings.HasPrefix(k, dir) {
				continue
			}
			if rest, ok := strings.CutPrefix(k, netDir); ok && !strings.Contains(rest, "/") {
				d.NetDevs = append(d.NetDevs, rest)
			}
			if rest, ok := strings.CutPrefix(k, ibDir); ok && !strings.Contains(rest, "/") {
				d.RDMADevs = append(d.RDMADevs, rest)
			}
			if rest, ok := strings.CutPrefix(k, irqDir); ok {
				if num, err := strconv.Atoi(rest); err == nil && num >= 0 {
					d.IRQs = append(d.IRQs, IRQ{Number: num, CPUs: strings.TrimSpace(p.raw.files["/proc/irq/"+rest+"/smp_affinity_list"])})
				}
			}
		}
		sort.Strings(d.NetDevs)
		sort.Strings(d.RDMADevs)
		if len(d.RDMADevs) > 0 && upstream != "" {
			d.PortMaxLinkSpeed = strings.TrimSpace(p.raw.files[upstream+"/max_link_speed"])
			d.PortMaxLinkWidth, _ = strconv.Atoi(strings.TrimSpace(p.raw.files[upstream+"/max_link_width"]))
		}
		sort.Slice(d.IRQs, func(i, j int) bool { return d.IRQs[i].Number < d.IRQs[j].Number })
		p.n.PCI = append(p.n.PCI, d)
	}
}

// pciParents reads the bridge chain from a /sys/bus/pci/devices symlink
// target ("../../../devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:1b:00.0"):
// every PCI address between the host bridge and the device itself.
func pciParents(target, self string) []string {
	parents := []string{}
	for _, c := range strings.Split(target, "/") {
		if pciAddress(c) && c != self {
			parents = append(parents, c)
		}
	}
	return parents
}

func (p *interpreter) rdma() {
	const base = "/sys/class/infiniband/"
	names := map[string]bool{}
	for k := range p.raw.links {
		if rest, ok := strings.CutPrefix(k, base); ok {
			name, _, _ := strings.Cut(rest, "/")
			names[name] = true
		}
	}
	for k := range p.raw.files {
		if rest, ok := strings.CutPrefix(k, base); ok {
			name, _, _ := strings.Cut(rest, "/")
			names[name] = true
		}
	}
	for name := range names {
		dir := base + name
		d := RDMADevice{Name: name, Ports: []RDMAPort{}, FirmwareVersion: strings.TrimSpace(p.raw.files[dir+"/fw_ver"])}
		if t, ok := p.raw.links[dir+"/device"]; ok {
			d.Address = path.Base(t)
		} else if t, ok := p.raw.links[dir]; ok {
			// ".../0000:1b:00.0/infiniband/mlx5_0"
			d.Address = path.Base(path.Dir(path.Dir(t)))
		}
		netDir := dir + "/device/net/"
		for k := range p.raw.exists {
			if rest, ok := strings.CutPrefix(k, netDir); ok && !strings.Contains(rest, "/") {
				d.NetDevs = append(d.NetDevs, rest)
			}
		}
		sort.Strings(d.NetDevs)
		for _, nd := range d.NetDevs {
			if m, err := strconv.Atoi(strings.TrimSpace(p.raw.files[dir+"/device/net/"+nd+"/mtu"])); err == nil {
				if d.MTU == nil {
					d.MTU = map[string]int{}
				}
				d.MTU[nd] = m
			}
		}
		for _, f := range p.sortedFiles(dir+"/ports/", "/link_layer") {
			portDir := path.Dir(f)
			num, err := strconv.Atoi(path.Base(portDir))
			if err != nil {
				continue
			}
			attr := func(n string) string { return strings.TrimSpace(p.raw.files[portDir+"/"+n]) }
			d.Ports = append(d.Ports, RDMAPort{Port: num, LinkLayer: attr("link_layer"), Rate: attr("rate"), State: attr("state"), PhysState: attr("phys_state")})
		}
		sort.Slice(d.Ports, func(i, j int) bool { return d.Ports[i].Port < d.Ports[j].Port })
		p.n.RDMA = append(p.n.RDMA, d)
	}
	sort.Slice(p.n.RDMA, func(i, j int) bool { return p.n.RDMA[i].Name < p.n.RDMA[j].Name })
}

func (p *interpreter) grub() {
	g := &p.n.Grub
	vars := map[string]string{}
	files := append([]string{"/etc/default/grub"}, p.sortedFiles("/etc/default/grub.d/", "")...)
	// update-grub sources /etc/default/grub and then grub.d/*.cfg in order,
	// so a later assignment wins; record the file of the last one.
	for _, f := range files {
		s, ok := p.file(f)
		if !ok {
			continue
		}
		if f != "/etc/default/grub" {
			if g.DropIns == nil {
				g.DropIns = map[string]string{}
			}
			g.DropIns[f] = s
			if !strings.HasSuffix(f, ".cfg") {
				continue
			}
		}
		before := [2]string{vars["GRUB_CMDLINE_LINUX"], vars["GRUB_CMDLINE_LINUX_DEFAULT"]}
		for k, v := range parseShellAssignmentsWith(s, vars) {
			vars[k] = v
		}
		if before != [2]string{vars["GRUB_CMDLINE_LINUX"], vars["GRUB_CMDLINE_LINUX_DEFAULT"]} {
			g.File = f
		}
	}
	if v, ok := vars["GRUB_CMDLINE_LINUX"]; ok {
		g.CmdlineLinux = strings.Fields(v)
	}
	if v, ok := vars["GRUB_CMDLINE_LINUX_DEFAULT"]; ok {
		g.CmdlineLinuxDefault = strings.Fields(v)
	}
}

func (p *interpreter) managed() {
	for _, m := range p.raw.managed {
		if c, ok := p.raw.files[m]; ok {
			p.n.ManagedFiles[m] = NewFile(c)
		}
	}
}

// configFiles fills ConfigFiles from the byte-exact records.
func (p *interpreter) configFiles() {
	for path, cf := range p.raw.configs {
		c := *cf
		if data, ok := p.raw.files[path]; ok {
			c.Exists = true
			c.Data = []byte(data)
			sum := sha256.Sum256(c.Data)
			c.SHA256 = hex.EncodeToString(sum[:])
			c.Size = len(c.Data)
			if c.Mode == "" {
				c.Error = "its mode and owner could not be read"
			}
		}
		if slices.Contains(p.raw.unreadable, path) {
			c.Exists = true
			c.Error = "exists but cannot be read by the login user (set become on the host)"
		}
		if msg, ok := p.raw.errors[path]; ok {
			c.Exists = true
			c.Error = msg
		}
		p.n.ConfigFiles[path] = c
	}
}

// containerdImports reads the probe's containerd-imports record: one line
// per pattern, the pattern then the files it matched, tab-separated, or
// the pattern then "?" when it could not be expanded.
func (p *interpreter) containerdImports() {
	c, ok := p.raw.cmds["containerd-imports"]
	if !ok || c.rc != 0 {
		return
	}
	p.n.ContainerdImports = []ContainerdImport{}
	for _, l := range strings.Split(c.out, "\n") {
		f := strings.Split(l, "\t")
		if f[0] == "" {
			continue
		}
		imp := ContainerdImport{Pattern: f[0]}
		for _, m := range f[1:] {
			switch {
			case m == "?":
				imp.Unread = true
			case m != "":
				imp.Files = append(imp.Files, m)
			}
		}
		sort.Strings(imp.Files)
		p.n.ContainerdImports = append(p.n.ContainerdImports, imp)
	}
}

// sysctlNames turns find's paths under /proc/sys ("./vm/swappiness") into
// sorted dotted names.
func sysctlNames(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, f := range paths {
		f = strings.TrimPrefix(f, "./")
		if f == "" || f == "." {
			continue
		}
		out = append(out, strings.ReplaceAll(f, "/", "."))
	}
	sort.Strings(out)
	return out
}
