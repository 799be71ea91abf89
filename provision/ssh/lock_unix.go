//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package ssh

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on f, which other gpuform
// processes recording host keys also take.
func lockFile(f *os.File) (unlock func(), err error) {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return nil, err
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }, nil
}
