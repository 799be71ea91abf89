//go:build unix

package main

import (
	"os"
	"syscall"
)

// keepOwner gives tmp the owner and group of the file described by info.
func keepOwner(tmp *os.File, info os.FileInfo) error {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	tst, err := tmp.Stat()
	if err != nil {
		return err
	}
	if t, ok := tst.Sys().(*syscall.Stat_t); ok && t.Uid == st.Uid && t.Gid == st.Gid {
		return nil
	}
	return tmp.Chown(int(st.Uid), int(st.Gid))
}
