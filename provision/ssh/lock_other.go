//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package ssh

import "os"

// lockFile is a no-op where flock is not available; appends of one line are
// still written with a single write call.
func lockFile(f *os.File) (unlock func(), err error) {
	return func() {}, nil
}
