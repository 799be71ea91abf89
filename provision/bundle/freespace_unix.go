//go:build unix

package bundle

import "golang.org/x/sys/unix"

// freeSpace is the room left to an unprivileged user in dir's file system,
// when the system says.
func freeSpace(dir string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true //nolint:gosec,unconvert // the product is far below 2^63; Bsize is uint32 on darwin
}
