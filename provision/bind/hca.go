package bind

import (
	"strconv"
	"strings"
)

// HCAFilter is an NCCL_IB_HCA value as NCCL reads it
// (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-ib-hca):
// a comma-separated list of device[:port]; a leading "^" excludes the
// listed devices instead, and a leading "=" (after any "^") matches names
// exactly instead of as prefixes, so that mlx5_1 does not also select
// mlx5_10.
type HCAFilter struct {
	// Exclude is the "^" form.
	Exclude bool
	// Exact is the "=" form.
	Exact bool
	// Devices are the listed device names, ports dropped.
	Devices []string
}

// ParseHCA reads an NCCL_IB_HCA value.
func ParseHCA(v string) HCAFilter {
	var f HCAFilter
	v = strings.TrimSpace(v)
	if r, ok := strings.CutPrefix(v, "^"); ok {
		f.Exclude, v = true, r
	}
	if r, ok := strings.CutPrefix(v, "="); ok {
		f.Exact, v = true, r
	}
	for _, e := range strings.Split(v, ",") {
		name, port, _ := strings.Cut(strings.TrimSpace(e), ":")
		if name == "" {
			continue
		}
		if port != "" {
			if _, err := strconv.Atoi(port); err != nil {
				continue
			}
		}
		f.Devices = append(f.Devices, name)
	}
	return f
}

// Selects reports whether NCCL would use device dev under f.
func (f HCAFilter) Selects(dev string) bool {
	listed := false
	for _, d := range f.Devices {
		if d == dev || !f.Exact && strings.HasPrefix(dev, d) {
			listed = true
			break
		}
	}
	return listed != f.Exclude
}
