package resource

import (
	"fmt"
	pathpkg "path"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/transport"
)

// Patterns every value must match before it is placed in a script. They
// repeat (and narrow) the spec's own validation, so that a value that got
// past it by any route still cannot reach a shell as anything but a word.
var (
	packageNamePattern = lazyre.New(`^[a-z0-9][a-z0-9.+\-]{0,127}$`)
	// pinPattern is a package version as apt (after '=') or dnf (after '-')
	// takes it: an optional epoch, then upstream and revision, optionally
	// ending in '*' for apt's prefix match.
	pinPattern      = lazyre.New(`^([0-9]{1,4}:)?[0-9][0-9A-Za-z.+~\-]{0,63}\*?$`)
	unitPattern     = lazyre.New(`^[a-zA-Z0-9_.@\-]{1,64}\.service$`)
	modulePattern   = lazyre.New(`^[a-z0-9_\-]{1,64}$`)
	filePathPattern = lazyre.New(`^/(etc|run|var/lib/gpuform)(/[A-Za-z0-9_.\-]+)+$`)
	shmSizePattern  = lazyre.New(`^[0-9]{1,20}(\.[0-9]{1,4})?[kmg%]?$`)
	governorPattern = lazyre.New(`^[a-z]{1,32}$`)
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

func check(re *lazyre.Regexp, what, v string) error {
	if !re.MatchString(v) || strings.Contains(v, "..") {
		return &ErrUnsafeValue{What: what, Value: v}
	}
	return nil
}

// q quotes a value for the shell. Every interpolation goes through it, even
// of values that passed their pattern.
func q(s string) string { return transport.Quote(s) }

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
	// then, unless none, puts the new file into effect (update-grub, a
	// service restart). It runs in
	// the same step; if it fails the previous file is restored (or the
	// new one removed), so a failure never leaves a file in place whose
	// effect did not happen — a later plan could not see the difference
	// and would not retry.
	then effect
}

// Patterns for what the probe read about a file, checked before it is put
// in a script (they come from the node).
var (
	idPattern       = lazyre.New(`^[0-9]{1,10}$`)
	lsModePattern   = lazyre.New(`^-[-rwxsStT]{9}[.+@]?$`)
	contextPattern  = lazyre.New(`^[A-Za-z0-9_.:,\-]{1,255}$`)
	resolvedPattern = lazyre.New(`^(/[^/\x00\n]+)+$`)
	// sha256HexPattern is a file's content digest as the probe reports it.
	sha256HexPattern = lazyre.New(`^[0-9a-f]{64}$`)
)

// currentFile returns what the probe read of path. Facts without a
// byte-exact read of it (hand-made in tests) read as absent: the step's
// guard then refuses to overwrite a file that exists.
func currentFile(n *facts.Node, path string) facts.ConfigFile {
	c, _ := n.ConfigFile(path)
	return c
}

// writeTarget checks what the plan read of path before a step acts on it:
// a file the probe could not read is not rewritten, and the path the file
// was resolved to (the target of any symlink on the way, as chroot "$R"
// resolves it) must be one the step can name. It returns that path: the
// step refuses to write when the path now leads elsewhere.
func writeTarget(path string, cur facts.ConfigFile) (string, error) {
	if cur.Error != "" {
		return "", fmt.Errorf("%s: gpuform will not rewrite it: %s", path, cur.Error)
	}
	if cur.Resolved == "" {
		return path, nil
	}
	if !resolvedPattern.MatchString(cur.Resolved) {
		return "", &ErrUnsafeValue{What: "resolved path", Value: cur.Resolved}
	}
	return cur.Resolved, nil
}

// step returns the step that replaces the file atomically
// (scripts/file_write.sh): the new content goes into a temporary file in
// the same directory, gets the old file's mode, owner, group and SELinux
// context (NewFileMode for a new file), is synced, and renamed over the
// old one, whose content is first copied to a timestamped backup. A
// symlinked file is written through: the target is replaced, the link
// stays. When the content equals the current file nothing is written, so
// the step is idempotent. The step refuses to write when the file's
// content (sha256), mode, owner or group differ from what the plan read.
func (w fileWrite) step() (Step, error) {
	if err := check(filePathPattern, "file path", w.path); err != nil {
		return Step{}, err
	}
	want, err := writeTarget(w.path, w.cur)
	if err != nil {
		return Step{}, err
	}
	expect, lsMode, uid, gid, mode, context := "absent", "", "", "", NewFileMode, ""
	if w.cur.Exists {
		if !sha256HexPattern.MatchString(w.cur.SHA256) {
			return Step{}, &ErrUnsafeValue{What: "sha256", Value: w.cur.SHA256}
		}
		expect = w.cur.SHA256
		oct, err := w.cur.Octal()
		if err != nil {
			return Step{}, fmt.Errorf("%s: %w", w.path, err)
		}
		for _, v := range []struct {
			what, v string
			re      *lazyre.Regexp
		}{
			{"mode", w.cur.Mode, lsModePattern}, {"uid", w.cur.UID, idPattern}, {"gid", w.cur.GID, idPattern},
		} {
			if err := check(v.re, v.what, v.v); err != nil {
				return Step{}, err
			}
		}
		lsMode, uid, gid, mode = w.cur.Mode, w.cur.UID, w.cur.GID, oct
		if w.cur.Context != "" {
			if err := check(contextPattern, "SELinux context", w.cur.Context); err != nil {
				return Step{}, err
			}
			context = w.cur.Context
		}
	}
	marker := ""
	if !w.then.none() {
		marker = PendingMarker(w.path)
	}
	args := append([]string{w.path, want, expect, lsMode, uid, gid, mode, context, marker, backupDir}, w.then.call()...)
	script := nodesh.Script(fileWriteScript, args, facts.Resolver, fileLibScript, effectLibScript)
	return Step{Description: w.desc, Script: script, Input: w.content, Become: true}, nil
}

// removeFileStep removes path after backing it up (scripts/file_remove.sh);
// removing a missing file succeeds. A symlink is removed itself, not its
// target. The step refuses when the file changed since the plan read it.
func removeFileStep(path string, cur facts.ConfigFile) (Step, error) {
	if err := check(filePathPattern, "file path", path); err != nil {
		return Step{}, err
	}
	if cur.Error != "" {
		return Step{}, fmt.Errorf("%s: gpuform will not remove it: %s", path, cur.Error)
	}
	expect := "absent"
	if cur.Exists {
		if !sha256HexPattern.MatchString(cur.SHA256) {
			return Step{}, &ErrUnsafeValue{What: "sha256", Value: cur.SHA256}
		}
		expect = cur.SHA256
	}
	dir, name := pathpkg.Split(path)
	script := fileScript(fileRemoveScript, pathpkg.Clean(dir), name, expect, path, backupDir)
	return Step{Description: "remove " + path, Script: script, Become: true}, nil
}

// unitStep enables a systemd unit, and starts it when now is true (a unit
// that needs a driver not yet loaded only starts at the next boot).
func unitStep(unit string, now bool) (Step, error) {
	if err := check(unitPattern, "unit name", unit); err != nil {
		return Step{}, err
	}
	if !now {
		return systemdUnitStep("enable "+unit+" (starts at the next boot)", unitEnable, unit), nil
	}
	return systemdUnitStep("enable and start "+unit, unitEnableNow, unit), nil
}

// Patterns for host settings, matching spec's validation.
var (
	sysctlKeyPattern   = lazyre.New(`^[a-z0-9_]+(\.[a-zA-Z0-9_\-]+)+$`)
	sysctlValuePattern = lazyre.New(`^[0-9A-Za-z_.:\- ]{1,128}$`)
	kernelArgPattern   = lazyre.New(`^[a-zA-Z0-9_.\-]+(=[a-zA-Z0-9_.,:\-/]+)?$`)
	// NCCL_IB_HCA entries and NCCL_SOCKET_IFNAME lists, as the spec takes
	// them ("mlx5_0:1", "^docker,lo").
	ncclHCAPattern    = lazyre.New(`^[=^]?[a-zA-Z0-9_.\-]{1,32}(:[0-9]{1,2})?$`)
	ncclIfnamePattern = lazyre.New(`^[=^]?[a-zA-Z0-9_.\-,]{1,64}$`)
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
