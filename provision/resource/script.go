package resource

import (
	"fmt"
	pathpkg "path"
	"regexp"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/transport"
)

// Patterns every value must match before it is placed in a script. They
// repeat (and narrow) the spec's own validation, so that a value that got
// past it by any route still cannot reach a shell as anything but a word.
var (
	packageNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9.+\-]{0,127}$`)
	// pinPattern is a package version as apt (after '=') or dnf (after '-')
	// takes it: an optional epoch, then upstream and revision, optionally
	// ending in '*' for apt's prefix match.
	pinPattern      = regexp.MustCompile(`^([0-9]{1,4}:)?[0-9][0-9A-Za-z.+~\-]{0,63}\*?$`)
	unitPattern     = regexp.MustCompile(`^[a-zA-Z0-9_.@\-]{1,64}\.service$`)
	modulePattern   = regexp.MustCompile(`^[a-z0-9_\-]{1,64}$`)
	filePathPattern = regexp.MustCompile(`^/(etc|run|var/lib/gpuform)(/[A-Za-z0-9_.\-]+)+$`)
	shmSizePattern  = regexp.MustCompile(`^[0-9]{1,20}(\.[0-9]{1,4})?[kmg%]?$`)
	governorPattern = regexp.MustCompile(`^[a-z]{1,32}$`)
)

// ErrUnsafeValue is wrapped by every error about a value that failed its
// pattern; it means a step was not built.
type ErrUnsafeValue struct {
	// What names the kind of value ("package name", "version").
	What string
	// Value is the offending value.
	Value string
}

func (e *ErrUnsafeValue) Error() string {
	return fmt.Sprintf("refusing to build a command from %s %q: it does not match %s's strict pattern", e.What, e.Value, e.What)
}

func check(re *regexp.Regexp, what, v string) error {
	if !re.MatchString(v) || strings.Contains(v, "..") {
		return &ErrUnsafeValue{What: what, Value: v}
	}
	return nil
}

// q quotes a value for the shell. Every interpolation goes through it, even
// of values that passed their pattern.
func q(s string) string { return transport.Quote(s) }

// scriptHead starts every step: fail on the first error, and address files
// under the root prefix ("" on a real node).
const scriptHead = "set -eu\nR=${GPUFORM_ROOT:-}\n"

// backupDir is where a file's previous content is kept, one timestamped
// directory per write, mirroring the file's path. Backups live outside the
// configuration directories on purpose: sysctl.d, modprobe.d and apt's
// preferences.d read files there by pattern, and a backup must never be
// read as configuration.
const backupDir = stateDir + "/backup"

// stateDir is where gpuform keeps its own state on a node.
const stateDir = "/var/lib/gpuform"

// NewFileMode is the mode of a file gpuform creates. A file that exists
// keeps its own mode, owner, group and SELinux context.
const NewFileMode = "0644"

// fileWrite is one planned rewrite of a whole file. The new content is
// computed on the controller from what the probe read byte for byte; the
// step only puts it in place, so no text filter on the node can lose a
// line.
type fileWrite struct {
	// desc is the step's description.
	desc string
	// path is the file as the node sees it.
	path string
	// content is the new file, sent on standard input.
	content string
	// cur is what the probe read: the step refuses to write when the file,
	// its mode or owner, or where its path leads changed since.
	cur facts.ConfigFile
	// then, when not empty, is one command (or an && chain) that puts the
	// new file into effect (update-grub, a service restart). It runs in
	// the same step; if it fails the previous file is restored (or the
	// new one removed), so a failure never leaves a file in place whose
	// effect did not happen — a later plan could not see the difference
	// and would not retry.
	then string
}

// Patterns for what the probe read about a file, checked before it is put
// in a script (they come from the node).
var (
	idPattern       = regexp.MustCompile(`^[0-9]{1,10}$`)
	lsModePattern   = regexp.MustCompile(`^-[-rwxsStT]{9}[.+@]?$`)
	contextPattern  = regexp.MustCompile(`^[A-Za-z0-9_.:,\-]{1,255}$`)
	resolvedPattern = regexp.MustCompile(`^(/[^/\x00\n]+)+$`)
)

// currentFile returns what the probe read of path. Facts without a
// byte-exact read of it (hand-made in tests) read as absent: the step's
// guard then refuses to overwrite a file that exists.
func currentFile(n *facts.Node, path string) facts.ConfigFile {
	c, _ := n.ConfigFile(path)
	return c
}

// fileGuard returns the shell that resolves path inside the root and
// checks it against what the plan saw: p is the file to write (the target
// of any symlink on the way, resolved as chroot "$R" would), d its
// directory. It refuses a path that now leads elsewhere, and anything but
// a regular file.
func fileGuard(path string, cur facts.ConfigFile) (string, error) {
	if cur.Error != "" {
		return "", fmt.Errorf("%s: gpuform will not rewrite it: %s", path, cur.Error)
	}
	want := path
	if cur.Resolved != "" {
		if !resolvedPattern.MatchString(cur.Resolved) {
			return "", &ErrUnsafeValue{What: "resolved path", Value: cur.Resolved}
		}
		want = cur.Resolved
	}
	var b strings.Builder
	b.WriteString(scriptHead)
	b.WriteString(`if [ -n "$R" ]; then R=$(cd -P -- "$R" && pwd -P); fi
`)
	b.WriteString(facts.Resolver)
	fmt.Fprintf(&b, `fail() { printf 'gpuform: %%s\n' "$*" >&2; exit 1; }
rw %[1]s || fail %[1]s": $_e"
p=$_r
if [ "${p#"$R"}" != %[2]s ]; then
	fail %[1]s" now leads to ${p#"$R"}, not "%[2]s" as planned; run gpuform plan again"
fi
if [ -e "$p" ] && [ ! -f "$p" ]; then fail %[1]s" is not a regular file"; fi
d=${p%%/*}
`, q(path), q(want))
	return b.String(), nil
}

// backupShell copies "$p" to a timestamped backup under backupDir
// (resolved inside the root too) and sets b to it; cp -p keeps its mode.
const backupShell = `rw "` + backupDir + `/$(date -u +%Y%m%dT%H%M%SZ)${p#"$R"}" || fail "backup: $_e"
b=$_r
mkdir -p -- "${b%/*}"
cp -p -- "$p" "$b"
`

// step returns the step that replaces the file atomically: the new content
// goes into a temporary file in the same directory, gets the old file's
// mode, owner, group and SELinux context (NewFileMode for a new file), is
// synced, and renamed over the old one, whose content is first copied to
// a timestamped backup. A symlinked file is written through: the target
// is replaced, the link stays. When the content equals the current file
// nothing is written, so the step is idempotent. The step refuses to write
// when the file's content (sha256), mode, owner or group differ from what
// the plan read.
func (w fileWrite) step() (Step, error) {
	if err := check(filePathPattern, "file path", w.path); err != nil {
		return Step{}, err
	}
	guard, err := fileGuard(w.path, w.cur)
	if err != nil {
		return Step{}, err
	}
	expect := "absent"
	var meta string
	if w.cur.Exists {
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(w.cur.SHA256) {
			return Step{}, &ErrUnsafeValue{What: "sha256", Value: w.cur.SHA256}
		}
		expect = w.cur.SHA256
		oct, err := w.cur.Octal()
		if err != nil {
			return Step{}, fmt.Errorf("%s: %w", w.path, err)
		}
		for _, v := range []struct {
			what, v string
			re      *regexp.Regexp
		}{
			{"mode", w.cur.Mode, lsModePattern}, {"uid", w.cur.UID, idPattern}, {"gid", w.cur.GID, idPattern},
		} {
			if err := check(v.re, v.what, v.v); err != nil {
				return Step{}, err
			}
		}
		// The owner first: chown may clear set-id bits that chmod sets.
		meta = fmt.Sprintf(`set -f
# shellcheck disable=SC2046 # ls's fields on purpose
set -- $(ls -lnd -- "$p")
set +f
if [ "$1" != %[1]s ] || [ "$3" != %[2]s ] || [ "$4" != %[3]s ]; then
	fail %[4]s" changed since this change was planned (mode and owner now $1 $3:$4); run gpuform plan again"
fi
chown %[2]s:%[3]s "$tmp"
chmod %[5]s "$tmp"
`, q(w.cur.Mode), w.cur.UID, w.cur.GID, q(w.path), oct)
		if w.cur.Context != "" {
			if err := check(contextPattern, "SELinux context", w.cur.Context); err != nil {
				return Step{}, err
			}
			meta += "chcon -- " + q(w.cur.Context) + ` "$tmp"` + "\n"
		}
	} else {
		meta = "chmod " + NewFileMode + ` "$tmp"` + "\n"
	}
	var b strings.Builder
	b.WriteString(guard)
	b.WriteString(`mkdir -p -- "$d"
tmp=$(mktemp "$d/.gpuform-tmp.XXXXXX")
trap 'rm -f -- "$tmp"' EXIT
trap 'exit 130' INT TERM HUP
cat >"$tmp"
`)
	if w.then != "" {
		// The marker says "written but not yet put into effect". It is
		// created before the rename and removed only after then succeeds,
		// so an apply killed in between (a dropped connection) leaves it
		// behind, the next plan sees it in /etc/gpuform, and this step runs
		// then again even though the file is already in place.
		fmt.Fprintf(&b, "rw %s || fail \"marker: $_e\"\nm=$_r\n", q(PendingMarker(w.path)))
		b.WriteString(`if [ -f "$p" ] && cmp -s -- "$tmp" "$p" && [ ! -e "$m" ]; then
	exit 0
fi
`)
	} else {
		b.WriteString(`if [ -f "$p" ] && cmp -s -- "$tmp" "$p"; then
	exit 0
fi
`)
	}
	fmt.Fprintf(&b, `cur=absent
if [ -e "$p" ]; then cur=$(sha256sum <"$p"); cur=${cur%%%% *}; fi
if [ "$cur" != %s ]; then
	fail "${p#"$R"} changed since this change was planned; run gpuform plan again"
fi
`, q(expect))
	b.WriteString(meta)
	// fsync the new content before the rename makes it visible, so a crash
	// leaves the old file or the new one, never an empty one.
	b.WriteString(`sync -- "$tmp" 2>/dev/null || sync
had=false
same=false
if [ -f "$p" ] && cmp -s -- "$tmp" "$p"; then
	same=true
elif [ -e "$p" ]; then
	had=true
` + backupShell + `fi
`)
	if w.then != "" {
		b.WriteString(`mkdir -p -- "${m%/*}" && : >"$m"
`)
	}
	b.WriteString(`if $same; then rm -f -- "$tmp"; else mv -f -- "$tmp" "$p"; fi
trap - EXIT
`)
	if w.then != "" {
		b.WriteString("if ! " + w.then + `; then
	if $same; then
		# Already in place from an interrupted run: still pending.
		fail "${p#"$R"} is in place but could not be put into effect"
	fi
	if $had; then
		cp -p -- "$b" "$d/.gpuform-restore" && mv -f -- "$d/.gpuform-restore" "$p"
	else
		rm -f -- "$p"
	fi
	rm -f -- "$m"
	fail "${p#"$R"} was not put into effect; the previous file is back in place"
fi
rm -f -- "$m"
`)
	}
	return Step{Description: w.desc, Script: b.String(), Input: w.content, Become: true}, nil
}

// removeFileStep removes path after backing it up; removing a missing file
// succeeds. A symlink is removed itself, not its target. The step refuses
// when the file changed since the plan read it.
func removeFileStep(path string, cur facts.ConfigFile) (Step, error) {
	if err := check(filePathPattern, "file path", path); err != nil {
		return Step{}, err
	}
	if cur.Error != "" {
		return Step{}, fmt.Errorf("%s: gpuform will not remove it: %s", path, cur.Error)
	}
	expect := "absent"
	if cur.Exists {
		if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(cur.SHA256) {
			return Step{}, &ErrUnsafeValue{What: "sha256", Value: cur.SHA256}
		}
		expect = cur.SHA256
	}
	var b strings.Builder
	b.WriteString(scriptHead)
	b.WriteString(`if [ -n "$R" ]; then R=$(cd -P -- "$R" && pwd -P); fi
`)
	b.WriteString(facts.Resolver)
	dir, name := pathpkg.Split(path)
	fmt.Fprintf(&b, `fail() { printf 'gpuform: %%s\n' "$*" >&2; exit 1; }
rw %[1]s || fail %[1]s": $_e"
p=$_r/%[2]s
[ -e "$p" ] || [ -h "$p" ] || exit 0
cur=absent
if [ -e "$p" ]; then cur=$(sha256sum <"$p"); cur=${cur%%%% *}; fi
if [ "$cur" != %[3]s ]; then
	fail %[4]s" changed since this change was planned; run gpuform plan again"
fi
if [ -e "$p" ]; then
`, q(pathpkg.Clean(dir)), q(name), q(expect), q(path))
	b.WriteString(backupShell)
	b.WriteString(`fi
rm -f -- "$p"
`)
	return Step{Description: "remove " + path, Script: b.String(), Become: true}, nil
}

// commandStep is a step running one fixed command line built by the caller
// from quoted words.
func commandStep(desc string, lines ...string) Step {
	return Step{Description: desc, Script: scriptHead + strings.Join(lines, "\n") + "\n", Become: true}
}

// words quotes each word and joins them with spaces.
func words(ws ...string) string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = q(w)
	}
	return strings.Join(out, " ")
}

// serviceStep enables and starts a systemd unit.
func serviceStep(unit string) (Step, error) { return unitStep(unit, true) }

// unitStep enables a systemd unit, and starts it when now is true (a unit
// that needs a driver not yet loaded only starts at the next boot).
func unitStep(unit string, now bool) (Step, error) {
	if err := check(unitPattern, "unit name", unit); err != nil {
		return Step{}, err
	}
	if !now {
		return commandStep("enable "+unit+" (starts at the next boot)", "systemctl enable "+q(unit)), nil
	}
	return commandStep("enable and start "+unit, "systemctl enable --now "+q(unit)), nil
}

// Patterns for host settings, matching spec's validation.
var (
	sysctlKeyPattern   = regexp.MustCompile(`^[a-z0-9_]+(\.[a-zA-Z0-9_\-]+)+$`)
	sysctlValuePattern = regexp.MustCompile(`^[0-9A-Za-z_.:\- ]{1,128}$`)
	kernelArgPattern   = regexp.MustCompile(`^[a-zA-Z0-9_.\-]+(=[a-zA-Z0-9_.,:\-/]+)?$`)
	// NCCL_IB_HCA entries and NCCL_SOCKET_IFNAME lists, as the spec takes
	// them ("mlx5_0:1", "^docker,lo").
	ncclHCAPattern    = regexp.MustCompile(`^[=^]?[a-zA-Z0-9_.\-]{1,32}(:[0-9]{1,2})?$`)
	ncclIfnamePattern = regexp.MustCompile(`^[=^]?[a-zA-Z0-9_.\-,]{1,64}$`)
)

// pendingDir is where PendingMarker puts its markers: a resource that
// writes through a pending marker declares it in its Reads.ManagedDirs.
const pendingDir = "/etc/gpuform"

// PendingMarker is the file that records, while a step runs, that path has
// been written but not yet put into effect (update-grub, a Docker restart).
// It lives in /etc/gpuform, which the facts probe reads whole.
func PendingMarker(path string) string {
	name := strings.ReplaceAll(strings.Trim(path, "/"), "/", "_")
	return pendingDir + "/pending-" + name
}
