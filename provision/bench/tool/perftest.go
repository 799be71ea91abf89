package tool

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// RDMAResult is what one ib_write_bw run reports, in Gb/s whatever unit
// the run printed.
type RDMAResult struct {
	// Device is the RDMA device the run used ("mlx5_0"), from the
	// "Device :" field of perftest's header.
	Device string
	// Port is the TCP port the two ends met on (perftest's -p). perftest
	// does not print it: ParseIBWriteBW leaves it 0 for the caller, who
	// chose it, to fill in.
	Port int
	// MsgBytes is the message size of the reported row: the largest one
	// of a sweep (-a), where the link reaches its rate.
	MsgBytes int
	// PeakGbps is "BW peak"; 0 when perftest did not measure it (it
	// prints 0.00 for duration runs, -D, and with --run_infinitely).
	PeakGbps float64
	// AvgGbps is "BW average", the figure to compare with the link rate.
	AvgGbps float64
	// MsgRateMpps is the message rate in millions of messages a second.
	MsgRateMpps float64
	// Unit is the unit perftest printed: "Gb/sec" (--report_gbits),
	// "MB/sec" (before perftest of March 2024) or "MiB/sec" (since); both
	// of the latter are 2^20 bytes a second.
	Unit string
	// Rows are every result row, in order, in Gb/s.
	Rows []RDMARow
}

// RDMARow is one result row of an ib_write_bw report.
type RDMARow struct {
	// MsgBytes and Iterations are the #bytes and #iterations columns.
	MsgBytes, Iterations int
	// PeakGbps and AvgGbps are BW peak and BW average in Gb/s; Mpps is
	// the message rate.
	PeakGbps, AvgGbps, Mpps float64
}

var (
	perftestHeader = lazyre.New(`#bytes\s+#iterations\s+BW peak\[([A-Za-z/]+)\]\s+BW average\[([A-Za-z/]+)\]`)
	perftestDevice = lazyre.New(`Device\s*:\s*(\S+)`)
)

// mibToGb converts perftest's MB/sec and MiB/sec (2^20 bytes a second:
// format_factor 0x100000 in perftest_parameters.c) to Gb/s.
const mibToGb = 1048576 * 8 / 1e9

// ParseIBWriteBW reads the report of one ib_write_bw run, server or client:
// perftest 4.x to 26.x, --report_gbits or not, one size or a sweep (-a),
// with the server's and client's reports interleaved when both ends ran
// in one terminal (a loopback run on one node). The reported row is the
// one with the largest message size.
//
// It returns an error when no result row follows the table header: the
// run failed (perftest's own message is quoted: "Couldn't connect to …",
// "Unable to find the Infiniband/RoCE device", "Completion with error"),
// or the output was cut before the results.
func ParseIBWriteBW(r io.Reader) (RDMAResult, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var (
		res      RDMAResult
		factor   float64 // 0 until a header line names the unit
		failure  string
		seenHead bool
	)
	for sc.Scan() {
		t := strings.TrimSpace(sc.Text())
		if m := perftestHeader.FindStringSubmatch(t); m != nil {
			seenHead = true
			switch m[2] {
			case "Gb/sec":
				factor = 1
			case "MB/sec", "MiB/sec":
				factor = mibToGb
			default:
				return res, fmt.Errorf("ib_write_bw reports bandwidth in %q, a unit gpuform does not know", m[2])
			}
			res.Unit = m[2]
			continue
		}
		if res.Device == "" {
			if m := perftestDevice.FindStringSubmatch(t); m != nil && strings.Contains(t, "Device") && !strings.Contains(t, "Couldn't") {
				res.Device = m[1]
			}
		}
		if factor != 0 {
			if row, ok := perftestRow(t, factor); ok {
				res.Rows = append(res.Rows, row)
				continue
			}
		}
		if failure == "" && perftestFailure(t) {
			failure = t
		}
	}
	if err := sc.Err(); err != nil {
		return res, fmt.Errorf("reading ib_write_bw output: %w", err)
	}
	if len(res.Rows) == 0 {
		switch {
		case failure != "":
			return res, fmt.Errorf("ib_write_bw failed: %s", failure)
		case seenHead:
			return res, errors.New("ib_write_bw output ends after the table header without a result: run cut short")
		default:
			return res, errors.New("no ib_write_bw result in the output")
		}
	}
	best := res.Rows[0]
	for _, row := range res.Rows[1:] {
		// >= keeps the last of equal sizes: in a loopback log the
		// client's repeated final line comes after the server's.
		if row.MsgBytes >= best.MsgBytes {
			best = row
		}
	}
	res.MsgBytes, res.PeakGbps, res.AvgGbps, res.MsgRateMpps = best.MsgBytes, best.PeakGbps, best.AvgGbps, best.Mpps
	if failure != "" {
		// A result printed before a failure (the other end's report
		// in a loopback log) is not a successful run.
		return res, fmt.Errorf("ib_write_bw failed: %s", failure)
	}
	return res, nil
}

// perftestRow parses "#bytes #iterations peak average msgrate", allowing
// perftest's extra per-port columns after them.
func perftestRow(t string, factor float64) (RDMARow, bool) {
	f := strings.Fields(t)
	if len(f) < 5 {
		return RDMARow{}, false
	}
	size, err1 := strconv.Atoi(f[0])
	iters, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || size <= 0 || iters < 0 {
		return RDMARow{}, false
	}
	var v [3]float64
	for i := range v {
		x, err := strconv.ParseFloat(f[2+i], 64)
		if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
			return RDMARow{}, false
		}
		v[i] = x
	}
	return RDMARow{MsgBytes: size, Iterations: iters, PeakGbps: v[0] * factor, AvgGbps: v[1] * factor, Mpps: v[2]}, true
}

// perftestFailure reports whether t is one of perftest's error lines.
func perftestFailure(t string) bool {
	for _, p := range []string{"Couldn't", "Unable to", "Failed to", "failed to", "Completion with error", "Error:", "ERROR", "No IB devices found", "is not supported", "Conflicting arguments"} {
		if strings.Contains(t, p) {
			return true
		}
	}
	return false
}
