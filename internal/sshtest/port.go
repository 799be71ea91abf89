package sshtest

import (
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// FreePort returns a TCP port for a daemon the test is about to start
// (sshd, slurmd, slurmctld, etcd, kube-apiserver), held for this test
// alone until it ends.
//
// Asking the kernel for port 0 and closing the listener is racy in two
// ways a loaded CI machine hits: every outgoing connection of every
// process takes its local port from the same ephemeral range, and so does
// every other test binary's port 0. A slurmd that loses the race exits
// ("Unable to bind listen port") and its node never registers. So the
// port comes from below the kernel's ephemeral range, where connect()
// never looks, and a lock file under the temporary directory (flock, let
// go when the test ends or its process dies) keeps test binaries running
// in parallel from choosing the same one. A port some other process
// already listens on fails the bind check and is passed over. Lock files
// are left behind, one small file per port ever handed out: removing one
// would let a process that opened it before the removal and one that
// creates it anew both hold "the" lock.
func FreePort(t testing.TB) int {
	t.Helper()
	b, _ := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	lo, hi, ok := reservablePorts(string(b))
	if !ok {
		return kernelPort(t)
	}
	dir := portLockDir()
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatalf("sshtest: port lock directory: %v", err)
	}
	_ = os.Chmod(dir, 0o1777) // tests running as another user share it
	for range 1000 {
		port := lo + rand.IntN(hi-lo)
		f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_RDONLY|os.O_CREATE, 0o666)
		if err != nil {
			continue // another user's lock file this user cannot read
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil || !bindable(port) {
			f.Close()
			continue
		}
		t.Cleanup(func() { f.Close() })
		return port
	}
	t.Fatalf("sshtest: no free port in %d-%d after 1000 tries", lo, hi)
	return 0
}

// portLockDir holds FreePort's lock files, one per port handed out.
func portLockDir() string { return filepath.Join(os.TempDir(), "gpuform-test-ports") }

// reservablePorts is the range [lo, hi) FreePort draws from, given the
// ephemeral range as /proc/sys/net/ipv4/ip_local_port_range prints it:
// from 10000 to just below it, or above it when that leaves too few. ok
// is false when neither side has a few thousand ports (or the text is not
// two numbers).
func reservablePorts(ephemeral string) (lo, hi int, ok bool) {
	f := strings.Fields(ephemeral)
	if len(f) != 2 {
		return 0, 0, false
	}
	first, err1 := strconv.Atoi(f[0])
	last, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	const base, enough = 10000, 4000
	switch {
	case first-base >= enough:
		return base, first, true
	case 65536-(last+1) >= enough:
		return last + 1, 65536, true
	}
	return 0, 0, false
}

// bindable reports whether nothing listens on port, on any address: a
// daemon binding 0.0.0.0 collides with a listener on 127.0.0.1 too.
func bindable(port int) bool {
	for _, addr := range []string{"0.0.0.0", "127.0.0.1"} {
		l, err := net.Listen("tcp4", net.JoinHostPort(addr, strconv.Itoa(port)))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

// kernelPort asks the kernel for a free port on 127.0.0.1: the fallback
// where no range can be set aside. The port is free again when the daemon
// binds it a moment later, which another process can win.
func kernelPort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("sshtest: find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
