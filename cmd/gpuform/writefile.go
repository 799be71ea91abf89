package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// writeFileAtomic replaces path by a fully written and synced temporary
// file, so an interrupted fmt or lock, or a power cut, never leaves half a
// file. The replacement keeps the file's mode, owner and group; a file
// without its owner's write bit (0444) is refused, as an editor would. A
// symlink is followed and its target rewritten, as terraform fmt does, so a
// spec file shared through a link stays shared. When the owner or group
// cannot be kept (the file belongs to someone else and is writable through
// its group), the file is rewritten in place instead, which keeps them.
func writeFileAtomic(path string, data []byte) error {
	path, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if info.Mode().Perm()&0o200 == 0 {
		return fmt.Errorf("%s is read-only (mode %04o); gpuform does not replace it", path, info.Mode().Perm())
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := keepOwner(tmp, info); err != nil {
		tmp.Close()
		return writeInPlace(path, data)
	}
	return finishTemp(tmp, path, data, info.Mode().Perm())
}

// writeNewFile writes path atomically, creating it (mode 0644) if needed.
func writeNewFile(path string, data []byte) error {
	if _, err := os.Lstat(path); err == nil {
		return writeFileAtomic(path, data)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	return finishTemp(tmp, path, data, 0o644)
}

// finishTemp writes data to tmp, syncs it, gives it mode and renames it over
// path, then syncs the directory so the rename itself is durable.
func finishTemp(tmp *os.File, path string, data []byte, mode os.FileMode) error {
	_, err := tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// writeInPlace truncates and rewrites path, then syncs it.
func writeInPlace(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// createNewFile writes a file that must not exist yet, in one step: O_EXCL
// makes the check and the creation atomic, and refuses a symlink in place
// of the file (dangling or not), so nothing is written through a link that
// someone else planted.
func createNewFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s exists (or is a symbolic link); import never overwrites a file", path)
	}
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
