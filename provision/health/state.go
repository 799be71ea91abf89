package health

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	// line, or the NVML event with the run's time.
	Key string `json:"key"`
	// Kind is "Xid" or "SXid".
	Kind string `json:"kind"`
	// Code is the Xid or SXid number.
	Code uint64 `json:"code"`
	// At is when it was logged (or seen, when the log has no time).
	At time.Time `json:"at"`
}

// maxStateBytes bounds the state file read: it holds one window of
// sightings.
const maxStateBytes = 4 << 20

// Update runs fn on the state in path under an exclusive lock (path +
// ".lock"), so two health runs on one node (slurmd's and an operator's)
// cannot lose each other's sightings, and writes the result atomically.
// A missing file is an empty state.
func Update(path string, fn func(*State) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("health state: %w", err)
	}
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("health state: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("health state: lock %s: %w", path+".lock", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	st := &State{Version: stateVersion}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("health state: %w", err)
	case len(b) > maxStateBytes:
		return fmt.Errorf("health state %s is larger than %d bytes; remove it to start over", path, maxStateBytes)
	default:
		if err := json.Unmarshal(b, st); err != nil {
			return fmt.Errorf("health state %s is not readable (%v); remove it to start over", path, err)
		}
		if st.Version != stateVersion {
			return fmt.Errorf("health state %s has format %d, this gpuform reads %d; remove it to start over", path, st.Version, stateVersion)
		}
	}
	if err := fn(st); err != nil {
		return err
	}
	out, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(out, '\n'), 0o600); err != nil {
		return fmt.Errorf("health state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("health state: %w", err)
	}
	return nil
}
