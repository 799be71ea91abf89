package resource

import (
	"fmt"
	"regexp"
	"strings"

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

// writeFileStep returns a step that replaces path atomically: the new
// content is produced into a temporary file in the same directory, synced,
// and renamed over the old one, whose content is first copied to a
// timestamped backup. produce is a shell fragment writing the new content
// to stdout; it may read the current file as "$p" and standard input. When
// the result equals the current file nothing is written, so the step is
// idempotent. expectSHA, when not empty, is the sha256 the current file
// must have ("absent" for no file): the step refuses to overwrite a file
// that changed since the plan that computed its new content.
//
// then, when not empty, is one command (or an && chain) that puts the new
// file into effect (update-grub, a service restart). It runs in the same
// step; if it fails the previous file is restored (or the new one removed),
// so a failure never leaves a file in place whose effect did not happen —
// a later plan could not see the difference and would not retry.
func writeFileStep(desc, path, mode, produce, input, expectSHA, then string) (Step, error) {
	if err := check(filePathPattern, "file path", path); err != nil {
		return Step{}, err
	}
	if !regexp.MustCompile(`^0[0-7]{3}$`).MatchString(mode) {
		return Step{}, &ErrUnsafeValue{What: "file mode", Value: mode}
	}
	if expectSHA != "" && expectSHA != "absent" && !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(expectSHA) {
		return Step{}, &ErrUnsafeValue{What: "sha256", Value: expectSHA}
	}
	var b strings.Builder
	b.WriteString(scriptHead)
	fmt.Fprintf(&b, "p=\"$R\"%s\n", q(path))
	b.WriteString(`d=${p%/*}
mkdir -p -- "$d"
tmp=$(mktemp "$d/.gpuform-tmp.XXXXXX")
trap 'rm -f -- "$tmp"' EXIT
trap 'exit 130' INT TERM HUP
{
`)
	b.WriteString(produce)
	b.WriteString("\n} >\"$tmp\"\n")
	fmt.Fprintf(&b, "chmod %s \"$tmp\"\n", mode)
	if then != "" {
		// The marker says "written but not yet put into effect". It is
		// created before the rename and removed only after then succeeds,
		// so an apply killed in between (a dropped connection) leaves it
		// behind, the next plan sees it in /etc/gpuform, and this step runs
		// then again even though the file is already in place.
		fmt.Fprintf(&b, "m=\"$R\"%s\n", q(PendingMarker(path)))
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
	if expectSHA != "" {
		fmt.Fprintf(&b, `cur=absent
if [ -e "$p" ]; then cur=$(sha256sum <"$p"); cur=${cur%%%% *}; fi
if [ "$cur" != %s ]; then
	echo "gpuform: ${p#"$R"} changed since this change was planned; run gpuform plan again" >&2
	exit 1
fi
`, q(expectSHA))
	}
	// fsync the new content before the rename makes it visible, so a crash
	// leaves the old file or the new one, never an empty one.
	b.WriteString(`sync -- "$tmp" 2>/dev/null || sync
had=false
same=false
if [ -f "$p" ] && cmp -s -- "$tmp" "$p"; then
	same=true
elif [ -e "$p" ]; then
	had=true
	b="$R"` + q(backupDir) + `/$(date -u +%Y%m%dT%H%M%SZ)${p#"$R"}
	mkdir -p -- "${b%/*}"
	cp -p -- "$p" "$b"
fi
`)
	if then != "" {
		b.WriteString(`mkdir -p -- "${m%/*}" && : >"$m"
`)
	}
	b.WriteString(`if $same; then rm -f -- "$tmp"; else mv -f -- "$tmp" "$p"; fi
trap - EXIT
`)
	if then != "" {
		b.WriteString("if ! " + then + `; then
	if $same; then
		# Already in place from an interrupted run: still pending.
		echo "gpuform: ${p#"$R"} is in place but could not be put into effect" >&2
		exit 1
	fi
	if $had; then
		cp -p -- "$b" "$d/.gpuform-restore" && mv -f -- "$d/.gpuform-restore" "$p"
	else
		rm -f -- "$p"
	fi
	rm -f -- "$m"
	echo "gpuform: ${p#"$R"} was not put into effect; the previous file is back in place" >&2
	exit 1
fi
rm -f -- "$m"
`)
	}
	return Step{Description: desc, Script: b.String(), Input: input, Become: true}, nil
}

// contentStep writes content (given on standard input) to path.
func contentStep(path, mode, content, expectSHA string) (Step, error) {
	return writeFileStep("write "+path, path, mode, "cat", content, expectSHA, "")
}

// removeFileStep removes path after backing it up; removing a missing file
// succeeds.
func removeFileStep(path string) (Step, error) {
	if err := check(filePathPattern, "file path", path); err != nil {
		return Step{}, err
	}
	var b strings.Builder
	b.WriteString(scriptHead)
	fmt.Fprintf(&b, "p=\"$R\"%s\n", q(path))
	b.WriteString(`[ -e "$p" ] || exit 0
b="$R"` + q(backupDir) + `/$(date -u +%Y%m%dT%H%M%SZ)${p#"$R"}
mkdir -p -- "${b%/*}"
cp -p -- "$p" "$b"
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

// PendingMarker is the file that records, while a step runs, that path has
// been written but not yet put into effect (update-grub, a Docker restart).
// It lives in /etc/gpuform, which the facts probe reads whole.
func PendingMarker(path string) string {
	name := strings.ReplaceAll(strings.Trim(path, "/"), "/", "_")
	return "/etc/gpuform/pending-" + name
}
