package health

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// DefaultStateFile is where health mode keeps its sightings on the node,
// beside the other state gpuform keeps there (/var/lib/gpuform).
const DefaultStateFile = "/var/lib/gpuform/health.json"

// stateVersion is the state file's format.
const stateVersion = 1

// State is health mode's memory between runs on one node.
type State struct {
	// Version is the file's format version.
	Version int `json:"version"`
	// Sightings are the monitor-class Xids seen within the window.
	Sightings []Sighting `json:"sightings"`
}

// Sighting is one monitor-class Xid seen once.
type Sighting struct {
	// Key tells a new sighting from one recorded before: the kernel log
	// line, or, for an event only NVML reported, the NVML event with the
	// run's time.
	Key string `json:"key"`
	// Kind is "Xid" or "SXid".
	Kind string `json:"kind"`
	// Code is the Xid or SXid number.
	Code uint64 `json:"code"`
	// PCI is the GPU's bus and device ("9d:00"); "" when unknown.
	PCI string `json:"pci,omitempty"`
	// At is when it was logged (or seen, when the log has no time).
	At time.Time `json:"at"`
	// From, set on a sighting only NVML reported, is when the run that
	// saw it started: the kernel's line for the same event is logged
	// between From and At, and a later run that reads it in the log
	// recognises the event instead of counting it again.
	From time.Time `json:"from,omitzero"`
}

// maxStateBytes bounds the state file read: it holds one window of
// sightings.
const maxStateBytes = 4 << 20

// StateError says the state file could not be used; health mode judged
// the run without what it could not read and drains all the same.
type StateError struct {
	// Path is the state file.
	Path string
	// Problem is what went wrong, and what was done about it.
	Problem string
}

func (e *StateError) Error() string {
	return fmt.Sprintf("health state %s is unusable: %s", e.Path, e.Problem)
}

// Update runs fn on the state in path under an exclusive lock (path +
// ".lock"), so two health runs on one node (slurmd's and an operator's)
// cannot lose each other's sightings, and writes the result atomically.
// It fails closed: fn always runs, on an empty state when the file cannot
// be read, and the problem comes back as a *StateError, so a failure that
// drains on sight still drains. A missing file is an empty state.
//
// What it promises (docs/security.md): the directory must be a real
// directory owned by this user and writable by no one else (it is
// created 0700), else nothing is written there; the file is opened with
// O_NOFOLLOW and must be a regular file, read at most maxStateBytes; a
// corrupt, oversized, linked or special file is moved aside (renamed,
// never followed) and the state rebuilt; a newer format is left for the
// gpuform that wrote it; the new state goes to a temporary file created
// exclusively (O_EXCL, random name) in that directory, renamed over path.
func Update(path string, fn func(*State)) error {
	st := &State{Version: stateVersion}
	var problems []string
	dir := filepath.Dir(path)
	writable := true
	if err := ownDir(dir); err != nil {
		problems = append(problems, err.Error()+", so nothing is written there")
		writable = false
	}
	if writable {
		lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			problems = append(problems, "lock: "+errText(err))
			writable = false
		} else {
			defer lock.Close()
			if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
				problems = append(problems, "lock: "+errText(err))
				writable = false
			} else {
				defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // lock.Close releases it in any case
			}
		}
	}

	old, unusable, keep := readState(path)
	switch {
	case unusable == "":
		st = old
	case keep:
		problems = append(problems, unusable+"; left as it is and not written")
		writable = false
	case !writable:
		problems = append(problems, unusable)
	default:
		aside := fmt.Sprintf("%s.unusable-%s", path, time.Now().UTC().Format("20060102T150405.000000000Z"))
		if err := os.Rename(path, aside); err != nil {
			problems = append(problems, unusable+"; moving it aside failed: "+errText(err))
		} else {
			problems = append(problems, unusable+"; moved aside to "+aside+" and rebuilt")
		}
	}

	fn(st)

	if writable {
		if err := writeState(dir, path, st); err != nil {
			problems = append(problems, "write: "+errText(err))
		}
	}
	if len(problems) > 0 {
		return &StateError{Path: path, Problem: strings.Join(problems, "; ")}
	}
	return nil
}

// ownDir makes sure dir is a directory only this user can write to,
// creating it 0700 when missing.
func ownDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("directory %s: %s", dir, errText(err))
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("directory %s: %s", dir, errText(err))
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (%s)", dir, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("directory %s belongs to uid %d, not this user (uid %d)", dir, st.Uid, os.Geteuid())
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("directory %s is writable by others (mode %04o)", dir, fi.Mode().Perm())
	}
	return nil
}

// readState reads the state at path. unusable says why it cannot be
// used ("" when it can, or when there is none); keep says the file must
// be left as it is (a newer gpuform's).
func readState(path string) (st *State, unusable string, keep bool) {
	st = &State{Version: stateVersion}
	// O_NONBLOCK: a FIFO planted at path must not hold the run.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return st, "", false
	case errors.Is(err, syscall.ELOOP):
		return st, "it is a symbolic link, which health mode does not follow", false
	case err != nil:
		return st, "read: " + errText(err), true
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return st, "read: " + errText(err), true
	}
	if !fi.Mode().IsRegular() {
		return st, fmt.Sprintf("it is not a regular file (%s)", fi.Mode().Type()), false
	}
	b, err := io.ReadAll(io.LimitReader(f, maxStateBytes+1))
	if err != nil {
		return st, "read: " + errText(err), true
	}
	if len(b) > maxStateBytes {
		return st, fmt.Sprintf("it is larger than %d bytes", maxStateBytes), false
	}
	var probe struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return st, "it is not JSON (" + err.Error() + ")", false
	}
	switch {
	case probe.Version == nil || *probe.Version < 1:
		return st, "it has no format version", false
	case *probe.Version > stateVersion:
		return st, fmt.Sprintf("it has format %d, newer than the %d this gpuform reads", *probe.Version, stateVersion), true
	case *probe.Version < stateVersion:
		return st, fmt.Sprintf("it has the old format %d", *probe.Version), false
	}
	var got State
	if err := json.Unmarshal(b, &got); err != nil {
		return st, "it is not a health state (" + err.Error() + ")", false
	}
	return &got, "", false
}

// writeState writes st to a temporary file created exclusively in dir and
// renames it over path: a planted path.tmp (or any other name) is never
// opened, and rename replaces a link at path instead of following it.
func writeState(dir, path string, st *State) error {
	out, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(append(out, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// errText is an error without Go's "open PATH: " wrapping, which the
// message already names.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Op + ": " + le.Err.Error()
	}
	return err.Error()
}
