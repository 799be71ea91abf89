//go:build linux

package bind

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mpolBind is MPOL_BIND of <linux/mempolicy.h>: allocate only on the
// nodes of the mask (golang.org/x/sys/unix does not define it).
const mpolBind = 2

// Exec binds this process to l's CPUs and NUMA node and replaces it with
// l's command. It returns only on failure. CPU affinity and the memory
// policy are per thread in Linux and survive execve on the thread that
// calls it, so all three happen on one locked OS thread.
func Exec(l *Launch) error {
	runtime.LockOSThread()
	// Never unlocked: on success the process is replaced, and on failure
	// the thread carries a binding the rest of the runtime must not get.
	if len(l.CPUs) > 0 {
		var set unix.CPUSet
		for _, c := range l.CPUs {
			if c >= len(set)*64 {
				return fmt.Errorf("CPU %d is beyond the %d CPUs sched_setaffinity takes here", c, len(set)*64)
			}
			set.Set(c)
		}
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("sched_setaffinity to CPUs %s (NUMA node %d): %w", l.GPU.CPUs, l.GPU.NUMA, err)
		}
		if err := setMempolicyBind(l.GPU.NUMA); err != nil {
			return fmt.Errorf("set_mempolicy(MPOL_BIND, NUMA node %d): %w", l.GPU.NUMA, err)
		}
	}
	if err := unix.Exec(l.Path, l.Argv, l.Env); err != nil {
		return fmt.Errorf("exec %s: %w", l.Path, err)
	}
	return nil
}

// setMempolicyBind sets the thread's memory policy to MPOL_BIND on one
// NUMA node: its pages come from that node only.
func setMempolicyBind(node int) error {
	const bits = 64
	if node < 0 || node >= 1024 {
		return fmt.Errorf("NUMA node %d is out of range", node)
	}
	mask := make([]uint64, node/bits+1)
	mask[node/bits] |= 1 << (uint(node) % bits)
	// maxnode counts bits; the kernel reads maxnode-1 of them (a
	// historical off-by-one every caller, numactl included, adds 1 for).
	maxnode := uintptr(len(mask)*bits + 1)
	_, _, errno := unix.Syscall(unix.SYS_SET_MEMPOLICY, mpolBind, uintptr(unsafe.Pointer(&mask[0])), maxnode)
	runtime.KeepAlive(mask)
	if errno != 0 {
		return errno
	}
	return nil
}
