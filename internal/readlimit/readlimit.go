// Package readlimit reads files and streams up to a size limit, so that
// input a user or a host controls (a spec linked to /dev/zero, a var-file
// that is a 10 GB log, a host that prints forever) costs bounded memory.
// It is not a parser and knows nothing of what the bytes mean.
package readlimit

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// TooLargeError reports input longer than the limit it was read under.
type TooLargeError struct {
	// Name is the file name, or a description of the stream.
	Name string
	// Limit is the most bytes that would have been accepted.
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s exceeds the limit of %s; gpuform reads no input this large", e.Name, FormatSize(e.Limit))
}

// ErrNotRegular means a file that must be a regular file is a device, a
// FIFO, a socket or a directory, any of which could be read forever.
var ErrNotRegular = errors.New("not a regular file")

// ReadFile reads the named file, failing with a *TooLargeError when it holds
// more than limit bytes. Whatever the file is, at most limit+1 bytes are read,
// so /dev/zero or a growing log cannot exhaust memory.
func ReadFile(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, name, limit)
}

// ReadRegularFile is ReadFile for files that must be regular: a FIFO or
// device where a spec file should be is refused before anything is read,
// since reading a FIFO can block forever.
func ReadRegularFile(name string, limit int64) ([]byte, error) {
	// Opening a FIFO for reading blocks until a writer comes, before any
	// check could refuse it; O_NONBLOCK makes that open return at once and
	// changes nothing for a regular file.
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &os.PathError{Op: "read", Path: name, Err: ErrNotRegular}
	}
	return ReadAll(f, name, limit)
}

// ReadAll reads r to its end, failing with a *TooLargeError named name once
// more than limit bytes arrive.
func ReadAll(r io.Reader, name string, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &TooLargeError{Name: name, Limit: limit}
	}
	return b, nil
}

// FormatSize renders a limit in binary units when it is a whole number of
// them ("4 MiB"), else in bytes.
func FormatSize(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
