package health

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const goodState = `{"version": 1, "sightings": [{"key": "kmsg a", "kind": "Xid", "code": 13, "at": "2026-12-01T12:00:00Z"}]}`

// Update fails closed: whatever is wrong with the state file, fn runs
// (on an empty state when nothing could be read) and the problem comes
// back; a corrupt file is moved aside and rebuilt; nothing is written
// through a link.
func TestUpdateFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		name string
		// plant makes the case in dir; path is the state file.
		plant func(t *testing.T, dir, path string)
		// problem is in the error; aside: the file was moved aside and a
		// fresh state written; kept: the file is left as it was.
		problem     string
		aside, kept bool
		sightings   int
	}{
		{"missing", func(t *testing.T, dir, path string) {}, "", false, false, 0},
		{"good", func(t *testing.T, dir, path string) { write(t, path, goodState) }, "", false, false, 1},
		{"empty", func(t *testing.T, dir, path string) { write(t, path, "") }, "is not JSON", true, false, 0},
		{"corrupt", func(t *testing.T, dir, path string) { write(t, path, `{"version": 1, "sightings": [`) }, "is not JSON", true, false, 0},
		{"wrong shape", func(t *testing.T, dir, path string) { write(t, path, `{"version": 1, "sightings": 7}`) }, "is not a health state", true, false, 0},
		{"no version", func(t *testing.T, dir, path string) { write(t, path, `{"sightings": []}`) }, "no format version", true, false, 0},
		// A newer gpuform's state is its own: left for it, not rewritten.
		{"newer format", func(t *testing.T, dir, path string) { write(t, path, `{"version": 2, "sightings": []}`) }, "newer than the 1", false, true, 0},
		{"oversized", func(t *testing.T, dir, path string) {
			write(t, path, `{"version": 1, "sightings": [], "pad": "`+strings.Repeat("x", maxStateBytes)+`"}`)
		}, "larger than", true, false, 0},
		// A link to /dev/zero is not followed (no endless read).
		{"link to /dev/zero", func(t *testing.T, dir, path string) { link(t, "/dev/zero", path) }, "symbolic link", true, false, 0},
		{"fifo", func(t *testing.T, dir, path string) {
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file", true, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "health.json")
			tc.plant(t, dir, path)
			before, _ := os.Lstat(path)
			ran := false
			var got int
			err := Update(path, func(st *State) {
				ran = true
				got = len(st.Sightings)
				st.Sightings = append(st.Sightings, Sighting{Key: "kmsg new", Kind: "Xid", Code: 13, At: time.Now()})
			})
			if !ran {
				t.Fatal("fn did not run")
			}
			if got != tc.sightings {
				t.Errorf("fn saw %d sightings, want %d", got, tc.sightings)
			}
			var se *StateError
			if tc.problem == "" {
				if err != nil {
					t.Fatalf("Update: %v", err)
				}
			} else if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.problem) {
				t.Fatalf("Update = %v, want a StateError saying %q", err, tc.problem)
			}
			asides, _ := filepath.Glob(path + ".unusable-*")
			if tc.aside != (len(asides) == 1) {
				t.Errorf("moved aside: %v, want %v (%v)", asides, tc.aside, err)
			}
			if tc.aside && !strings.Contains(err.Error(), "moved aside to "+asides[0]+" and rebuilt") {
				t.Errorf("error does not say where the file went: %v", err)
			}
			if tc.aside {
				if fi, _ := os.Lstat(asides[0]); fi == nil || fi.Mode().Type() != before.Mode().Type() {
					t.Errorf("what was moved aside is not the planted file: %v", fi)
				}
			}
			if tc.kept {
				if fi, _ := os.Lstat(path); fi == nil || fi.ModTime() != before.ModTime() || fi.Size() != before.Size() {
					t.Errorf("the newer state was rewritten")
				}
				return
			}
			var st State
			b, rerr := os.ReadFile(path)
			if rerr != nil || json.Unmarshal(b, &st) != nil || st.Version != stateVersion || len(st.Sightings) != tc.sightings+1 {
				t.Errorf("state after the run: %v %s", rerr, b)
			}
			if fi, _ := os.Lstat(path); fi == nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
				t.Errorf("state file is %v", fi)
			}
		})
	}
}

// A planted health.json.tmp (the old fixed temporary name) pointing at
// another file is never written through, nor is a planted lock link.
func TestUpdateNeverWritesThroughALink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	write(t, victim, "keep me\n")
	path := filepath.Join(dir, "health.json")
	link(t, victim, path+".tmp")
	if err := Update(path, func(st *State) {}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	if fi, _ := os.Lstat(path); fi == nil || !fi.Mode().IsRegular() {
		t.Errorf("health.json is %v", fi)
	}
	// A lock link is refused (O_NOFOLLOW): nothing written, fn still runs.
	dir2 := t.TempDir()
	path2 := filepath.Join(dir2, "health.json")
	link(t, victim, path2+".lock")
	ran := false
	err := Update(path2, func(st *State) { ran = true })
	if !ran || err == nil || !strings.Contains(err.Error(), "lock") {
		t.Errorf("planted lock link: ran %v, err %v", ran, err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Errorf("the lock link's target changed: %q", b)
	}
	if _, err := os.Lstat(path2); err == nil {
		t.Error("state written without its lock")
	}
}

// A directory others can write to (where they could plant links) or that
// is a link is not written in; the run still goes on.
func TestUpdateRefusesAForeignDirectory(t *testing.T) {
	open := t.TempDir()
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(t.TempDir(), "linked")
	link(t, t.TempDir(), linked)
	for _, dir := range []string{open, linked} {
		path := filepath.Join(dir, "health.json")
		ran := false
		err := Update(path, func(st *State) { ran = true })
		if !ran || err == nil || !strings.Contains(err.Error(), "nothing is written there") {
			t.Errorf("%s: ran %v, err %v", dir, ran, err)
		}
		if _, err := os.Lstat(path); err == nil {
			t.Errorf("%s: state written", dir)
		}
	}
	// A missing directory is created 0700.
	path := filepath.Join(t.TempDir(), "a", "b", "health.json")
	if err := Update(path, func(st *State) {}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Dir(path)); fi.Mode().Perm() != 0o700 {
		t.Errorf("created directory mode %04o", fi.Mode().Perm())
	}
}

// On a read-only file system (a diskless node's /var/lib) the sightings
// already there are read and the run goes on; the problem is reported.
func TestUpdateReadOnlyFileSystem(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a read-only tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m,mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, 0) })
	path := filepath.Join(dir, "health.json")
	write(t, path, goodState)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT|syscall.MS_RDONLY, "size=1m,mode=0700"); err != nil {
		t.Fatal(err)
	}
	got := -1
	err := Update(path, func(st *State) { got = len(st.Sightings) })
	if got != 1 || err == nil || !strings.Contains(err.Error(), "read-only file system") {
		t.Errorf("read-only: fn saw %d sightings, err %v", got, err)
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}
