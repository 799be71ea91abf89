// Package cpulist reads the kernel's cpulist format ("0-55,112-167", as in
// /sys/devices/system/node/node*/cpulist and /sys/devices/system/cpu/online),
// for the facts probe, the NVML agent and the simulated nodes alike.
//
// It is not a CPU topology model: it only expands the list.
package cpulist

import (
	"fmt"
	"strconv"
	"strings"
)

// maxRange bounds one range, so that a corrupted file ("0-999999999")
// cannot make a caller allocate gigabytes.
const maxRange = 1 << 16

// Parse expands a cpulist into CPU numbers in the order written. An empty
// list is no CPUs, not an error: a memory-only NUMA node (CXL memory, HBM
// without cores) has an empty cpulist.
func Parse(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("bad cpulist %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > maxRange {
				return nil, fmt.Errorf("bad cpulist %q", s)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
