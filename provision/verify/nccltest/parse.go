package nccltest

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// Run is one nccl-tests invocation as read from its output. An output may
// hold several runs (a shell loop, a log of several tests).
type Run struct {
	// Test is the test program from "# Collective test starting: NAME"
	// (nccl-tests 2.16.7+); empty for older builds.
	Test string `json:"test,omitempty"`
	// Version is the nccl-tests version from its first line (2.17.4+).
	Version string `json:"version,omitempty"`
	// NCCLVersion is the library's "NCCL version 2.x.y+cudaA.B" string when printed.
	NCCLVersion string `json:"nccl_version,omitempty"`
	// NGPUs is nGpus from the header line (GPUs per process).
	NGPUs int `json:"ngpus,omitempty"`
	// Validation is false when the run had `-c 0` (no #wrong counts).
	Validation bool `json:"validation"`
	// Devices are the rank lines ("# Rank N ... on HOST device D [BUS] NAME").
	Devices []Device `json:"devices,omitempty"`
	// Rows are the result rows in output order.
	Rows []Row `json:"rows,omitempty"`
	// OutOfBounds is the footer count; nil when the footer is missing.
	OutOfBounds *OutOfBounds `json:"out_of_bounds,omitempty"`
	// AvgBusBW is the "Avg bus bandwidth" footer value, kept for display
	// only: it is never used to judge a run.
	AvgBusBW *float64 `json:"avg_busbw,omitempty"`
	// Failures are NCCL/CUDA failure, timeout and error lines, in order.
	Failures []string `json:"failures,omitempty"`
	// Causes are the lines NCCL itself printed about what went wrong:
	// every "NCCL WARN" line and CUDA/NCCL error line, in order. They say
	// why a run failed where Failures only say that it did.
	Causes []string `json:"causes,omitempty"`
	// Network is the network transport NCCL used between nodes ("IB",
	// "Socket", "AWS Libfabric", …) as its INFO lines say ("Using network
	// X", "via NET/X/…"); empty when the run printed no INFO lines
	// (NCCL_DEBUG unset).
	Network string `json:"network,omitempty"`
	// netWeight ranks the line Network was read from, so that a
	// definite "Using network" line wins over weaker hints.
	netWeight int
	// OldFormat is true for the pre-2.13 layout with an `error` column.
	OldFormat bool `json:"old_format,omitempty"`
}

// Device is one rank line.
type Device struct {
	// Rank is the global rank.
	Rank int `json:"rank"`
	// Host is the host name the rank ran on.
	Host string `json:"host"`
	// Device is the CUDA device ordinal on that host.
	Device int `json:"device"`
	// BusID is the PCI bus as printed: "0x18" (before 2.14.1) or "0000:18:00".
	BusID string `json:"bus_id"`
	// Name is the GPU name, e.g. "NVIDIA H100 80GB HBM3".
	Name string `json:"name"`
}

// Row is one message size.
type Row struct {
	// Size is the message size in bytes.
	Size int64 `json:"size"`
	// Count is the element count.
	Count int64 `json:"count"`
	// Type is the element type, e.g. "float".
	Type string `json:"type"`
	// Redop is the reduction ("sum", "none"; empty in old alltoall output).
	Redop string `json:"redop,omitempty"`
	// OutOfPlace is the out-of-place half.
	OutOfPlace Half `json:"out_of_place"`
	// InPlace is the in-place half.
	InPlace Half `json:"in_place"`
}

// Half is one of the two measurements of a row.
type Half struct {
	// TimeUS is the time per iteration in microseconds.
	TimeUS float64 `json:"time_us"`
	// AlgBW is the algorithm bandwidth in GB/s.
	AlgBW float64 `json:"algbw"`
	// BusBW is the bus bandwidth in GB/s.
	BusBW float64 `json:"busbw"`
	// Wrong is the #wrong count; nil when printed as N/A or in the old
	// format, whose `error` column is a deviation, not a count.
	Wrong *int64 `json:"wrong,omitempty"`
	// NotFinite holds the printed text ("nan", "-nan", "inf") of a time or
	// bandwidth column that was not a finite number; that column reads 0.
	// Judge fails such a row: NaN compares false with every floor, and
	// encoding/json cannot write it.
	NotFinite string `json:"not_finite,omitempty"`
}

// OutOfBounds is the "# Out of bounds values : N OK|FAILED" footer.
type OutOfBounds struct {
	// Count is the number of out-of-bounds values.
	Count int64 `json:"count"`
	// OK is true when nccl-tests printed OK.
	OK bool `json:"ok"`
}

var (
	// Launcher prefixes: `srun --label` (" 0: "), OpenMPI --tag-output
	// ("[1,0]<stdout>:").
	srunLabel = lazyre.New(`^\s*\d+:\s?`)
	ompiTag   = lazyre.New(`^\[\d+,\d+\]<std(?:out|err)>:\s?`)
	rankLine  = lazyre.New(`^#\s+Rank\s+(\d+)(?:\s+Group\s+\d+)?\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s+(.*?)\s*$`)
	failLine  = lazyre.New(`Test (?:NCCL|CUDA) failure|Test timeout|Invalid number of GPUs|^#\s*error:`)
	// causeLine matches what NCCL and CUDA print about an error: NCCL's
	// WARN lines and error names (the INFO call-stack lines that follow a
	// WARN are left out: they repeat it as "-> 1").
	causeLine = lazyre.New(`NCCL WARN|Cuda failure|CUDA error|NCCL error|ncclUnhandledCudaError|ncclSystemError|ncclInternalError|ncclInvalidUsage|ncclInvalidArgument|ncclRemoteError`)
	// infoVersion reads the version from NCCL_DEBUG=INFO output, where
	// it carries the host:pid:tid prefix of every INFO line.
	infoVersion = lazyre.New(`NCCL INFO NCCL version (\S+)`)
	usingNet    = lazyre.New(`NCCL INFO Using network (.+?)\s*$`)
	viaNet      = lazyre.New(`via NET/([^/]+)/`)
	socketInit  = lazyre.New(`NCCL INFO NET/Socket : Using`)
)

// Parse reads nccl-tests output. It never fails on content: lines it does
// not understand (ssh and MPI warnings, NCCL INFO lines, shell prompts) are
// skipped. It returns an error only when reading r fails.
func Parse(r io.Reader) ([]Run, error) {
	var runs []Run
	cur := func() *Run {
		if len(runs) == 0 {
			runs = append(runs, Run{})
		}
		return &runs[len(runs)-1]
	}
	// begin starts a new run unless the current one has not got going yet
	// (its "Collective test starting" or version line came first).
	begin := func() *Run {
		if c := cur(); c.NGPUs == 0 && len(c.Rows) == 0 && c.OutOfBounds == nil && len(c.Failures) == 0 {
			return c
		}
		runs = append(runs, Run{})
		return cur()
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := ompiTag.ReplaceAllString(sc.Text(), "")
		line = srunLabel.ReplaceAllString(line, "")
		line = strings.TrimRight(line, " \t\r")
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
		case strings.HasPrefix(trimmed, "# nccl-tests version"):
			f := strings.Fields(trimmed)
			r := begin()
			if len(f) >= 4 {
				r.Version = f[3]
			}
		case strings.HasPrefix(trimmed, "# Collective test starting:"):
			r := begin()
			r.Test = strings.TrimSpace(strings.TrimPrefix(trimmed, "# Collective test starting:"))
		case strings.HasPrefix(trimmed, "# nThread"):
			r := begin()
			r.NGPUs = headerInt(trimmed, "nGpus")
			r.Validation = headerInt(trimmed, "validation:") != 0
		case strings.HasPrefix(trimmed, "NCCL version"):
			cur().NCCLVersion = strings.TrimSpace(strings.TrimPrefix(trimmed, "NCCL version"))
		case strings.Contains(trimmed, "NCCL INFO"):
			readInfo(cur(), trimmed)
		case strings.HasPrefix(trimmed, "# Out of bounds values"):
			if f := strings.Fields(afterColon(trimmed)); len(f) >= 1 {
				n, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					cur().OutOfBounds = &OutOfBounds{Count: n, OK: len(f) >= 2 && f[1] == "OK"}
				}
			}
		case strings.HasPrefix(trimmed, "# Avg bus bandwidth"):
			if f := strings.Fields(afterColon(trimmed)); len(f) >= 1 {
				if v, err := strconv.ParseFloat(f[0], 64); err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
					cur().AvgBusBW = &v
				}
			}
		case strings.Contains(trimmed, " error ") && strings.HasPrefix(trimmed, "#") && strings.Contains(trimmed, "busbw"):
			// The pre-2.13 column header names the last column "error".
			cur().OldFormat = true
		case failLine.MatchString(trimmed):
			cur().Failures = append(cur().Failures, trimmed)
		case causeLine.MatchString(trimmed) && !strings.HasPrefix(trimmed, "#"):
			cur().Causes = append(cur().Causes, trimmed)
		case strings.HasPrefix(trimmed, "#"):
			if m := rankLine.FindStringSubmatch(trimmed); m != nil {
				rank, _ := strconv.Atoi(m[1])
				dev, _ := strconv.Atoi(m[3])
				cur().Devices = append(cur().Devices, Device{Rank: rank, Host: m[2], Device: dev, BusID: m[4], Name: m[5]})
			}
		default:
			if row, ok := parseRow(trimmed); ok {
				cur().Rows = append(cur().Rows, row)
			}
		}
	}
	return runs, sc.Err()
}

// readInfo takes the NCCL version and the network transport from an
// NCCL_DEBUG=INFO line.
func readInfo(r *Run, line string) {
	if m := infoVersion.FindStringSubmatch(line); m != nil {
		r.NCCLVersion = m[1]
		return
	}
	for _, h := range []struct {
		re     *lazyre.Regexp
		weight int
	}{{usingNet, 3}, {viaNet, 2}, {socketInit, 1}} {
		m := h.re.FindStringSubmatch(line)
		if m == nil || h.weight < r.netWeight {
			continue
		}
		r.netWeight = h.weight
		if len(m) > 1 {
			r.Network = m[1]
		} else {
			r.Network = "Socket"
		}
		return
	}
}

// Causes returns the NCCL WARN, CUDA/NCCL error and nccl-tests failure
// lines of b (a command's standard error), in order.
func Causes(b []byte) []string {
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		line = srunLabel.ReplaceAllString(ompiTag.ReplaceAllString(line, ""), "")
		line = strings.TrimSpace(line)
		if line != "" && !strings.Contains(line, "NCCL INFO") && (failLine.MatchString(line) || causeLine.MatchString(line)) {
			out = append(out, line)
		}
	}
	return out
}

func afterColon(s string) string {
	_, v, _ := strings.Cut(s, ":")
	return v
}

// headerInt returns the integer after key in the "# nThread ..." line.
func headerInt(line, key string) int {
	f := strings.Fields(line)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == key {
			n, err := strconv.Atoi(f[i+1])
			if err == nil {
				return n
			}
		}
	}
	return 0
}

// parseRow reads a result row by whitespace tokens, anchored at both ends:
// size, count and type first; the two halves last; whatever is between is
// redop and root (absent, one or two tokens depending on the era).
func parseRow(line string) (Row, bool) {
	f := strings.Fields(line)
	// A trailing `-S 1` timestamp is not numeric: drop it.
	for k := 0; k < 2 && len(f) > 0 && !numeric(f[len(f)-1]); k++ {
		f = f[:len(f)-1]
	}
	var halfLen int
	switch len(f) {
	case 11, 12, 13:
		halfLen = 4
	case 19, 20, 21:
		// `-I 1`: four per-iteration columns after each half.
		halfLen = 8
	default:
		return Row{}, false
	}
	size, err1 := strconv.ParseInt(f[0], 10, 64)
	count, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || size < 0 || count < 0 || numeric(f[2]) {
		return Row{}, false
	}
	tail := f[len(f)-2*halfLen:]
	mid := f[3 : len(f)-2*halfLen]
	oop, ok1 := parseHalf(tail[:4])
	ip, ok2 := parseHalf(tail[halfLen : halfLen+4])
	if !ok1 || !ok2 {
		return Row{}, false
	}
	row := Row{Size: size, Count: count, Type: f[2], OutOfPlace: oop, InPlace: ip}
	if len(mid) >= 1 {
		row.Redop = mid[0]
	}
	return row, true
}

func parseHalf(t []string) (Half, bool) {
	var h Half
	for i, dst := range []*float64{&h.TimeUS, &h.AlgBW, &h.BusBW} {
		v, ok := parseMeasure(t[i])
		if !ok {
			return h, false
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			if h.NotFinite == "" {
				h.NotFinite = t[i]
			}
			v = 0
		}
		*dst = v
	}
	if t[3] != "N/A" {
		// 2.13+ prints an integer count; pre-2.13 prints a deviation like
		// "0e+00" which is not a count and stays nil.
		if n, err := strconv.ParseInt(t[3], 10, 64); err == nil {
			h.Wrong = &n
		} else if _, err := strconv.ParseFloat(t[3], 64); err != nil {
			return h, false
		}
	}
	return h, true
}

// parseMeasure parses a time or bandwidth column. glibc's printf writes a
// negative NaN as "-nan", which strconv does not take; it is read as NaN so
// the row is kept (and failed by Judge) rather than silently dropped, which
// would make a smaller size the "largest" one.
func parseMeasure(s string) (float64, bool) {
	if strings.EqualFold(s, "-nan") || strings.EqualFold(s, "+nan") {
		return math.NaN(), true
	}
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

func numeric(s string) bool {
	if s == "N/A" {
		return true
	}
	_, ok := parseMeasure(s)
	return ok
}
