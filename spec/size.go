package spec

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/spelling"
)

// Size is an amount of memory: either an absolute byte count or a percentage
// of the node's RAM (as /dev/shm sizes are often written).
type Size struct {
	// Bytes is the absolute size; zero when Percent is set.
	Bytes uint64
	// Percent is a share of RAM in (0, 100]; zero for absolute sizes.
	Percent float64
	// Unlimited marks the ulimit value "unlimited".
	Unlimited bool
}

// IsPercent reports whether the size is relative to RAM.
func (s Size) IsPercent() bool { return s.Percent > 0 }

// Resolve returns the size in bytes for a node with ram bytes of memory.
func (s Size) Resolve(ram uint64) uint64 {
	if s.IsPercent() {
		return uint64(float64(ram) * s.Percent / 100)
	}
	return s.Bytes
}

// String renders the size the way a person writes it: binary units when the
// size is a whole number of them, else plain bytes.
func (s Size) String() string {
	switch {
	case s.Unlimited:
		return "unlimited"
	case s.IsPercent():
		return strconv.FormatFloat(s.Percent, 'f', -1, 64) + "%"
	}
	return FormatBytes(s.Bytes)
}

// FormatBytes renders n with the largest binary unit that divides it
// exactly (internal/spelling, the one spelling of sizes in human output).
func FormatBytes(n uint64) string { return spelling.Bytes(n) }

var sizeUnits = map[string]uint64{
	"":    1,
	"b":   1,
	"k":   1 << 10,
	"kb":  1000,
	"kib": 1 << 10,
	"m":   1 << 20,
	"mb":  1000 * 1000,
	"mib": 1 << 20,
	"g":   1 << 30,
	"gb":  1000 * 1000 * 1000,
	"gib": 1 << 30,
	"t":   1 << 40,
	"tb":  1000 * 1000 * 1000 * 1000,
	"tib": 1 << 40,
}

// ParseSize reads "16GiB", "64g", "512MB", "1024", "50%" or "unlimited".
// Single-letter units are binary, as in Docker's --shm-size and mount(8)'s
// size= option, which is where operators copy these values from.
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return Size{}, fmt.Errorf("empty size")
	}
	if strings.EqualFold(t, "unlimited") || t == "-1" {
		return Size{Unlimited: true}, nil
	}
	if p, ok := strings.CutSuffix(t, "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || f <= 0 || f > 100 || math.IsNaN(f) {
			return Size{}, fmt.Errorf("%q is not a percentage between 0 and 100", s)
		}
		return Size{Percent: f}, nil
	}
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := sizeUnits[unit]
	if num == "" || !ok {
		return Size{}, fmt.Errorf("%q is not a size; write it like \"16GiB\", \"512MiB\", \"64g\" or \"50%%\"", s)
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return Size{}, fmt.Errorf("%q is not a size", s)
	}
	b := f * float64(mult)
	if b > math.MaxUint64/2 {
		return Size{}, fmt.Errorf("%q is too large", s)
	}
	if b != math.Trunc(b) {
		return Size{}, fmt.Errorf("%q is not a whole number of bytes", s)
	}
	return Size{Bytes: uint64(b)}, nil
}
