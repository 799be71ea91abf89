package nccltest

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// Verdict is the judgement of one run against a busbw floor.
type Verdict struct {
	// Pass is true when every rule held.
	Pass bool `json:"pass"`
	// Size is the largest message size in bytes (0 without rows).
	Size int64 `json:"size"`
	// BusBW is the smaller of out-of-place and in-place busbw at Size, GB/s.
	BusBW float64 `json:"busbw"`
	// Floor is the floor judged against, GB/s (0 = bandwidth not judged).
	Floor float64 `json:"floor"`
	// Reasons says why the run failed, one entry per broken rule; what
	// NCCL printed about the failure (Causes) comes first.
	Reasons []string `json:"reasons,omitempty"`
	// Causes are the NCCL WARN and CUDA/NCCL error lines of the output,
	// every one, in order.
	Causes []string `json:"causes,omitempty"`
}

// lead puts the first of causes in front of reasons and the distinct
// others after it: the line NCCL printed about the error tells an operator
// more than "exit status 3". Lines are ordered by causeRank, output order
// within a rank: NCCL warns about harmless things too ("falling back to
// simple order") before the warning that killed the run. A cause that a
// reason already quotes is not repeated.
func (v *Verdict) lead(causes []string) {
	v.Causes = append(v.Causes, causes...)
	if len(causes) == 0 || len(v.Reasons) == 0 {
		return
	}
	ranked := slices.Clone(causes)
	slices.SortStableFunc(ranked, func(a, b string) int {
		return causeRank(b) - causeRank(a)
	})
	var front []string
	seen := map[string]bool{}
	for _, c := range ranked {
		key := causeKey(c)
		if seen[key] {
			continue
		}
		seen[key] = true
		front = append(front, c)
	}
	var rest []string
	for _, r := range v.Reasons {
		if !seen[causeKey(r)] {
			rest = append(rest, r)
		}
	}
	v.Reasons = append(front, rest...)
}

// errorLine matches a cause line that names an error, not only a warning.
var errorLine = lazyre.New(`Cuda failure|CUDA error|NCCL error|ncclUnhandledCudaError|ncclSystemError|ncclInternalError|ncclInvalidUsage|ncclInvalidArgument|ncclRemoteError|Test (?:NCCL|CUDA) failure|Test timeout`)

// causeRank orders cause lines: NCCL's own error warning (the root
// cause, e.g. "NCCL WARN Cuda failure 1 'invalid argument'") first, then
// other error lines (nccl-tests' "Test NCCL failure … 'unhandled cuda
// error'", which only relays it), then warnings that name no error.
func causeRank(line string) int {
	switch {
	case errorLine.MatchString(line) && strings.Contains(line, "NCCL WARN"):
		return 2
	case errorLine.MatchString(line):
		return 1
	}
	return 0
}

// causeKey is a cause line without the "host:pid:tid [dev] " prefix NCCL
// puts on every line, so the same warning from eight ranks counts once.
func causeKey(line string) string {
	for _, marker := range []string{"NCCL WARN", "Test NCCL failure", "Test CUDA failure"} {
		if i := strings.Index(line, marker); i >= 0 {
			return line[i:]
		}
	}
	return line
}

// Largest returns the row with the largest message size (the last one on a
// tie) and false when the run has no rows.
func (r *Run) Largest() (Row, bool) {
	if len(r.Rows) == 0 {
		return Row{}, false
	}
	best := r.Rows[0]
	for _, row := range r.Rows[1:] {
		if row.Size >= best.Size {
			best = row
		}
	}
	return best, true
}

// Judge applies the pass rules to one run: no failure lines, at least one
// row, every time and bandwidth a finite number, the out-of-bounds footer present with 0 and OK, #wrong 0 in every row
// where it was counted, and (when floor > 0) the largest size's busbw, the
// smaller of out-of-place and in-place, at or above floor.
func Judge(r Run, floor float64) Verdict {
	v := Verdict{Floor: floor}
	v.Reasons = append(v.Reasons, r.Failures...)
	row, ok := r.Largest()
	switch {
	case !ok && len(r.Causes) > 0:
		// What NCCL warned about is the reason; lead puts it first.
		v.Reasons = append(v.Reasons, "the test stopped before measuring anything")
	case !ok:
		v.Reasons = append(v.Reasons, "no result rows: the test stopped before measuring anything")
	default:
		v.Size = row.Size
		v.BusBW = math.Min(row.OutOfPlace.BusBW, row.InPlace.BusBW)
		if floor > 0 && v.BusBW < floor {
			v.Reasons = append(v.Reasons, fmt.Sprintf("busbw %.2f GB/s at %s is below the floor %.2f GB/s", v.BusBW, FormatSize(row.Size), floor))
		}
	}
	var bad []string
	for _, row := range r.Rows {
		for _, h := range []struct {
			name string
			text string
		}{{"out-of-place", row.OutOfPlace.NotFinite}, {"in-place", row.InPlace.NotFinite}} {
			if h.text != "" {
				bad = append(bad, fmt.Sprintf("%s %s: %s", FormatSize(row.Size), h.name, h.text))
			}
		}
	}
	if len(bad) > 0 {
		v.Reasons = append(v.Reasons, "time or bandwidth is not a number (the measurement is invalid): "+strings.Join(bad, ", "))
	}
	var wrong []string
	for _, row := range r.Rows {
		for _, h := range []struct {
			name string
			w    *int64
		}{{"out-of-place", row.OutOfPlace.Wrong}, {"in-place", row.InPlace.Wrong}} {
			if h.w != nil && *h.w != 0 {
				wrong = append(wrong, fmt.Sprintf("%s %s: %d", FormatSize(row.Size), h.name, *h.w))
			}
		}
	}
	if len(wrong) > 0 {
		v.Reasons = append(v.Reasons, "#wrong is not 0 (data corruption): "+strings.Join(wrong, ", "))
	}
	switch {
	case r.OutOfBounds == nil && ok:
		v.Reasons = append(v.Reasons, `no "Out of bounds values" footer: the run did not finish`)
	case r.OutOfBounds != nil && (!r.OutOfBounds.OK || r.OutOfBounds.Count != 0):
		v.Reasons = append(v.Reasons, fmt.Sprintf("out of bounds values: %d (FAILED)", r.OutOfBounds.Count))
	}
	v.lead(r.Causes)
	v.Pass = len(v.Reasons) == 0
	return v
}

// FormatSize renders a byte count the way nccl-tests options take it
// (8G, 128M, 1K), exact powers of 1024 only; other sizes stay in bytes.
func FormatSize(n int64) string {
	for _, u := range []struct {
		div  int64
		unit string
	}{{1 << 40, "T"}, {1 << 30, "G"}, {1 << 20, "M"}, {1 << 10, "K"}} {
		if n >= u.div && n%u.div == 0 {
			return fmt.Sprintf("%d%s", n/u.div, u.unit)
		}
	}
	return fmt.Sprintf("%dB", n)
}
