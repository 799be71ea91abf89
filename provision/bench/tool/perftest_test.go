package tool

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 0.005 }

// TestIBWriteBWFixtures parses real ib_write_bw reports. Expected values
// are the file's numbers, converted to Gb/s where the file prints MB/sec
// (perftest's MB is 2^20 bytes: 24056.72 MB/s × 2^20 × 8 / 10^9).
func TestIBWriteBWFixtures(t *testing.T) {
	tests := []struct {
		file         string
		device, unit string
		rows         int
		msg          int
		peak, avg    float64
		mpps         float64
		failsWith    string
	}{
		// Loopback: server and client reports of one run, one after
		// the other; both rows are the same.
		{file: "ib_write_bw-MBsec-loopback-8M-superbench.log", device: "ib0", unit: "MB/sec", rows: 2, msg: 8388608,
			peak: 24056.74 * mibToGb, avg: 24056.72 * mibToGb, mpps: 0.003007},
		// Loopback sweep (-a) with the two reports interleaved line by
		// line; the largest size's row repeats at the end.
		{file: "ib_write_bw-MBsec-loopback-all-sizes-superbench.log", device: "ib0", unit: "MB/sec", rows: 24, msg: 8388608,
			peak: 23240.68 * mibToGb, avg: 23240.68 * mibToGb, mpps: 0.002905},
		// --report_gbits, post list, RoCE; BW peak 0.00 (not measured).
		{file: "ib_write_bw-Gbsec-roce-postlist-8B-issue273.txt", device: "ib0", unit: "Gb/sec", rows: 1, msg: 8,
			peak: 0, avg: 0.48, mpps: 7.498617},
		// perftest 26.x layout (Lock-free, Enhanced Reorder, CQE Poll
		// Batch) with a CPU frequency warning between header and row;
		// NDR ConnectX-7 at 392 of 400 Gb/s.
		{file: "ib_write_bw-Gbsec-ndr-cx7-client-dac-guide.txt", device: "mlx5_0", unit: "Gb/sec", rows: 1, msg: 65536,
			peak: 392.38, avg: 392.34, mpps: 0.748336},
		// ib_send_bw prints the same report; the MiB/sec label of 2024 on.
		{file: "ib_send_bw-MiBsec-ndr-cx7-client-dac-guide.txt", device: "mlx5_0", unit: "MiB/sec", rows: 1, msg: 65536,
			peak: 46567.34 * mibToGb, avg: 46557.03 * mibToGb, mpps: 0.744912},
		{file: "ib_write_bw-connect-error-pr228.txt", failsWith: "ib_write_bw failed: Couldn't connect to 192.168.125.211:18515"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			res, err := ParseIBWriteBW(open(t, tt.file))
			if tt.failsWith != "" {
				if err == nil || !strings.Contains(err.Error(), tt.failsWith) {
					t.Fatalf("error = %v, want %q", err, tt.failsWith)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Device != tt.device || res.Unit != tt.unit || len(res.Rows) != tt.rows || res.MsgBytes != tt.msg {
				t.Errorf("device %q unit %q rows %d msg %d, want %q %q %d %d", res.Device, res.Unit, len(res.Rows), res.MsgBytes, tt.device, tt.unit, tt.rows, tt.msg)
			}
			if !near(res.PeakGbps, tt.peak) || !near(res.AvgGbps, tt.avg) || res.MsgRateMpps != tt.mpps {
				t.Errorf("peak %.3f avg %.3f mpps %v, want %.3f %.3f %v", res.PeakGbps, res.AvgGbps, res.MsgRateMpps, tt.peak, tt.avg, tt.mpps)
			}
		})
	}
}

// TestIBWriteBWErrors: cut, damaged and foreign outputs are errors.
func TestIBWriteBWErrors(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "ib_write_bw-MBsec-loopback-8M-superbench.log"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	head := " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
	tests := []struct{ name, in, wantErr string }{
		{"empty", "", "no ib_write_bw result"},
		{"garbage", "\x00\x01 8388608 x y z\n", "no ib_write_bw result"},
		{"not installed", "bash: ib_write_bw: command not found\n", "no ib_write_bw result"},
		// The capture cut right after its first table header.
		{"cut after header", s[:strings.Index(s, head)+len(head)], "run cut short"},
		{"unknown unit", strings.ReplaceAll(s, "MB/sec", "KB/sec"), `"KB/sec"`},
		// A result from the other end followed by a failure is a failure.
		{"result then failure", s + "\n Completion with error at client\n", "ib_write_bw failed: Completion with error at client"},
		{"no device", " Unable to find the Infiniband/RoCE device\n", "ib_write_bw failed: Unable to find the Infiniband/RoCE device"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseIBWriteBW(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
