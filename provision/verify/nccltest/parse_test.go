package nccltest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func parseFile(t *testing.T, name string) []Run {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// TestFixtures checks, for every real output in testdata, that the busbw
// parsed at the largest size equals the value printed in the file (read by
// eye from the file's last row and written down here), and the verdict.
func TestFixtures(t *testing.T) {
	type last struct {
		size    int64
		oop, ip float64
	}
	tests := []struct {
		file      string
		last      []last // one per run
		ranks     int    // device lines in the last run
		wrongNil  bool   // #wrong printed as N/A (or the old error column)
		old       bool
		redop     string
		pass      bool // Judge with floor 0
		failsWith string
	}{
		{file: "all_gather_perf-16xB200-2node-gcp-a4-roce.txt", last: []last{{8589934592, 260.03, 259.25}}, ranks: 16, redop: "none", pass: true},
		{file: "all_reduce_perf-16xA100-2node-roce-16x100g-oci-mpirun.txt", last: []last{{10737418240, 191.76, 191.75}}, ranks: 16, redop: "sum", pass: true},
		// srun --label prefixes every line with " 0: "; -c 0 prints N/A.
		{file: "all_reduce_perf-16xH100-2node-ib-srun-label-check0-degraded.txt", last: []last{{8589934592, 155.57, 155.56}}, ranks: 16, wrongNil: true, redop: "sum", pass: true},
		{file: "all_reduce_perf-16xH200-2node-single-shared-nic-socket.txt", last: []last{{17179869184, 92.33, 92.35}}, ranks: 16, redop: "sum", pass: true},
		// One rank: busbw is 0 by definition; in-place algbw overflows its column.
		{file: "all_reduce_perf-1xRTX5090-single-gpu-busbw-zero.txt", last: []last{{134217728, 0, 0}}, ranks: 1, redop: "sum", pass: true},
		{file: "all_reduce_perf-2xH200-2node-1nic-mpi-operator-with-openmpi-warnings.txt", last: []last{{8589934592, 31.89, 31.88}}, ranks: 2, redop: "sum", pass: true},
		{file: "all_reduce_perf-2xL40S-2node-1gpu-per-node-socket-transport.txt", last: []last{{8589934592, 8.11, 8.12}}, ranks: 2, redop: "sum", pass: true},
		{file: "all_reduce_perf-2xRTX5090-pcie-nccl-failure.txt", last: []last{{0, 0, 0}}, ranks: 2, failsWith: "Test NCCL failure common.cu:392 'unhandled cuda error"},
		// Six 2-GPU runs in one log, separated by shell prompts.
		{file: "all_reduce_perf-2xV100-dgx1-pairs-check0-NA.log", last: []last{
			{33554432, 5.63, 5.75}, {33554432, 5.69, 5.59}, {33554432, 21.86, 21.96},
			{33554432, 5.64, 5.59}, {33554432, 42.36, 42.37}, {33554432, 5.52, 5.64},
		}, ranks: 2, wrongNil: true, redop: "sum", pass: true},
		{file: "all_reduce_perf-8xA100-sxm4-40gb-1node-mpirun-oci.txt", last: []last{{10737418240, 232.20, 232.13}}, ranks: 8, redop: "sum", pass: true},
		{file: "all_reduce_perf-8xA100-sxm4-40gb-pre2.13-format-error-column.log", last: []last{{8589934592, 235.26, 235.03}}, ranks: 8, wrongNil: true, old: true, redop: "sum", pass: true},
		{file: "all_reduce_perf-8xH100-nvswitch-1node.txt", last: []last{{4294967296, 473.60, 476.53}}, ranks: 8, redop: "sum", pass: true},
		// Markdown heading and quoted mpirun command above the output.
		{file: "all_reduce_perf-16xH100-2node-gcp-a3mega-tcpxo-mpirun.txt", last: []last{{8589934592, 338.82, 337.35}}, ranks: 16, redop: "sum", pass: true},
		// NCCL_DEBUG=INFO: harmless WARN lines first, then the Cuda
		// failure that stopped the run; the failure leads.
		{file: "all_reduce_perf-2xRTX5090-nccl-debug-info-cuda-failure.txt", last: []last{{0, 0, 0}}, ranks: 2, failsWith: "enqueue.cc:1500 NCCL WARN Cuda failure 1 'invalid argument'"},
		// Only WARN lines: the warning is the reason, not "no result rows".
		{file: "nccl-warn-only-nvls-cuda-failure-h800.txt", last: []last{{0, 0, 0}}, ranks: 0, failsWith: "transport/nvls.cc:158 NCCL WARN Cuda failure 1 'invalid argument'"},
		// Old alltoall: blank redop, 11 tokens per row.
		{file: "alltoall_perf-8xA100-sxm4-40gb-pre2.13-format-blank-redop.log", last: []last{{8589934592, 224.31, 226.16}}, ranks: 8, wrongNil: true, old: true, redop: "", pass: true},
		// Published outputs added for issue 27 (sources in testdata/README.md).
		// CoreWeave's 8-node H100 SHARP example: the author elided the
		// rank lines ("..."); the sweep ends at 8G.
		{file: "all_reduce_perf-64xH100-8node-ib-sharp-coreweave-elided.txt", last: []last{{8589934592, 386.56, 385.56}}, ranks: 0, redop: "sum", pass: true},
		// CoreWeave GB200 NVL72 "Expected Performance": one rank line kept.
		{file: "all_reduce_perf-72xGB200-nvl72-1rack-coreweave-elided.txt", last: []last{{8589934592, 834.57, 846.82}}, ranks: 1, redop: "sum", pass: true},
		{file: "all_reduce_perf-144xGB200-nvl72-2racks-coreweave-elided.txt", last: []last{{17179869184, 810.41, 820.36}}, ranks: 1, redop: "sum", pass: true},
		{file: "all_reduce_perf-1440xGB200-nvl72-20racks-coreweave-elided.txt", last: []last{{17179869184, 405.74, 404.77}}, ranks: 1, redop: "sum", pass: true},
		// 2 nodes x 2 L40S over RDMA with NCCL_ALGO=ring, -g 2 per rank.
		{file: "all_reduce_perf-4xL40S-2node-2gpu-ib-ring.txt", last: []last{{8589934592, 9.63, 9.62}}, ranks: 4, redop: "sum", pass: true},
		// all_gather with one GPU per node (DRANET docs); sizes 0 at the start.
		{file: "all_gather_perf-2xB200-2node-1gpu-dranet-nvidia-dra.txt", last: []last{{1073741824, 36.67, 45.14}}, ranks: 2, redop: "none", pass: true},
		{file: "all_gather_perf-2xH200-2node-1gpu-gke-rdma-demo.txt", last: []last{{8589934592, 32.20, 33.32}}, ranks: 2, redop: "none", pass: true},
		// The author cut the table ("truncated NCCL output for brevity"):
		// a footer without rows proves nothing.
		{file: "all_gather_perf-16xB200-4pod-misaligned-truncated-by-author.txt", last: []last{{0, 0, 0}}, ranks: 16, failsWith: "no result rows"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			runs := parseFile(t, tt.file)
			if len(runs) != len(tt.last) {
				t.Fatalf("%d runs, want %d", len(runs), len(tt.last))
			}
			for i, want := range tt.last {
				row, ok := runs[i].Largest()
				if want.size == 0 {
					if ok {
						t.Errorf("run %d: rows parsed from a run that printed none: %+v", i, row)
					}
					continue
				}
				if !ok {
					t.Fatalf("run %d: no rows", i)
				}
				if row.Size != want.size || row.OutOfPlace.BusBW != want.oop || row.InPlace.BusBW != want.ip {
					t.Errorf("run %d largest row: size %d busbw %v/%v, want %d %v/%v", i, row.Size, row.OutOfPlace.BusBW, row.InPlace.BusBW, want.size, want.oop, want.ip)
				}
				if row.Redop != tt.redop {
					t.Errorf("run %d redop %q, want %q", i, row.Redop, tt.redop)
				}
				if (row.OutOfPlace.Wrong == nil) != tt.wrongNil {
					t.Errorf("run %d wrong: %v", i, row.OutOfPlace.Wrong)
				}
				// No published output here reports corruption: every
				// #wrong it counted reads 0.
				for _, r := range runs[i].Rows {
					for _, w := range []*int64{r.OutOfPlace.Wrong, r.InPlace.Wrong} {
						if w != nil && *w != 0 {
							t.Errorf("run %d, %d bytes: #wrong %d, the file prints 0", i, r.Size, *w)
						}
					}
				}
			}
			r := runs[len(runs)-1]
			if len(r.Devices) != tt.ranks {
				t.Errorf("%d rank lines, want %d", len(r.Devices), tt.ranks)
			}
			if r.OldFormat != tt.old {
				t.Errorf("old format %v, want %v", r.OldFormat, tt.old)
			}
			v := Judge(r, 0)
			if v.Pass != tt.pass {
				t.Errorf("verdict %+v, want pass=%v", v, tt.pass)
			}
			if tt.failsWith != "" && (len(v.Reasons) == 0 || !strings.Contains(v.Reasons[0], tt.failsWith)) {
				t.Errorf("reasons %q, want one containing %q", v.Reasons, tt.failsWith)
			}
		})
	}
}

func TestFixtureDetails(t *testing.T) {
	r := parseFile(t, "all_gather_perf-16xB200-2node-gcp-a4-roce.txt")[0]
	if r.NCCLVersion != "2.26.6+cuda12.8" {
		t.Errorf("NCCL version %q", r.NCCLVersion)
	}
	if d := r.Devices[8]; d.Host != "nccl-gib-test-1" || d.BusID != "0000:8f:00" || d.Name != "NVIDIA B200" || d.Device != 0 {
		t.Errorf("rank 8: %+v", d)
	}
	if r.AvgBusBW == nil || *r.AvgBusBW != 59.3638 {
		t.Errorf("avg busbw %v", r.AvgBusBW)
	}
	old := parseFile(t, "all_reduce_perf-8xA100-sxm4-40gb-pre2.13-format-error-column.log")[0]
	if d := old.Devices[3]; d.BusID != "0x00" || d.Name != "A100-SXM4-40GB" {
		t.Errorf("old rank line: %+v", d)
	}
	oci := parseFile(t, "all_reduce_perf-8xA100-sxm4-40gb-1node-mpirun-oci.txt")[0]
	if oci.Test != "all_reduce_perf" || oci.NGPUs != 1 || !oci.Validation {
		t.Errorf("header: %+v", oci)
	}
}

func TestJudgeFloor(t *testing.T) {
	r := parseFile(t, "all_reduce_perf-8xH100-nvswitch-1node.txt")[0]
	// The smaller half (473.60 out-of-place) is what counts, not the
	// "Avg bus bandwidth" of 439.369.
	if v := Judge(r, 473.6); !v.Pass || v.BusBW != 473.60 {
		t.Errorf("at floor: %+v", v)
	}
	v := Judge(r, 474)
	if v.Pass || len(v.Reasons) != 1 || !strings.Contains(v.Reasons[0], "473.60 GB/s at 4G is below the floor 474.00") {
		t.Errorf("below floor: %+v", v)
	}
}

// TestDerivedVariants edits real outputs into cases no public capture shows.
func TestDerivedVariants(t *testing.T) {
	base, err := os.ReadFile(filepath.Join("testdata", "all_reduce_perf-8xH100-nvswitch-1node.txt"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(base)
	lastRow := "  4294967296    1073741824     float     sum      -1    15870  270.63  473.60      0    15773  272.30  476.53      0"
	if !strings.Contains(src, lastRow) {
		t.Fatal("fixture changed: last row not found")
	}
	tests := []struct {
		name  string
		text  string
		pass  bool
		want  string
		busbw float64
	}{
		{
			// Data corruption as nccl-tests src/common.cu prints it: a
			// non-zero #wrong and a FAILED footer.
			name: "wrong",
			text: strings.Replace(strings.Replace(src, lastRow, strings.Replace(lastRow, "476.53      0", "476.53      3", 1), 1),
				"# Out of bounds values : 0 OK", "# Out of bounds values : 3 FAILED", 1),
			want: "#wrong is not 0", busbw: 473.60,
		},
		{
			// A run killed mid-table: rows, no footer.
			name: "aborted",
			text: src[:strings.Index(src, lastRow)], //nolint:gocritic // lastRow is in src: checked above
			want: `no "Out of bounds values" footer`, busbw: 468.57,
		},
		{
			// printf("%7.2f") of a NaN or an infinite bandwidth (a zero or
			// broken timer) prints nan, -nan or inf; the largest size must
			// not pass on a value that compares false with every floor.
			name: "nan-busbw",
			text: strings.Replace(src, lastRow, "  4294967296    1073741824     float     sum      -1    15870     nan     nan      0    15773  272.30  476.53      0", 1),
			want: "not a number", busbw: 0,
		},
		{
			name: "minus-nan-busbw",
			text: strings.Replace(src, lastRow, "  4294967296    1073741824     float     sum      -1    15870    -nan    -nan      0    15773  272.30  476.53      0", 1),
			want: "not a number", busbw: 0,
		},
		{
			name: "inf-busbw",
			text: strings.Replace(src, lastRow, "  4294967296    1073741824     float     sum      -1     0.00     inf     inf      0     0.00     inf     inf      0", 1),
			want: "not a number", busbw: 0,
		},
		{
			// A smaller size with nan fails the run too, although the
			// largest size is fine.
			name: "nan-small-size",
			text: strings.Replace(src, "   134217728      33554432     float     sum      -1    613.3  218.85  382.99", "   134217728      33554432     float     sum      -1    613.3     nan     nan", 1),
			want: "not a number", busbw: 473.60,
		},
		{
			// OpenMPI --tag-output prefixes every line.
			name: "ompi-tag",
			text: "[1,0]<stdout>:" + strings.ReplaceAll(strings.TrimSuffix(src, "\n"), "\n", "\n[1,0]<stdout>:") + "\n",
			pass: true, busbw: 473.60,
		},
		{
			// -I 1 adds four per-iteration columns after each half.
			name: "per-iteration",
			text: strings.Replace(src, lastRow, "  4294967296    1073741824     float     sum      -1    15870  270.63  473.60      0  15800  15900  15890  0.20    15773  272.30  476.53      0  15700  15800  15790  0.10", 1),
			pass: true, busbw: 473.60,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs, err := Parse(strings.NewReader(tt.text))
			if err != nil || len(runs) != 1 {
				t.Fatalf("%d runs, %v", len(runs), err)
			}
			v := Judge(runs[0], 400)
			if v.Pass != tt.pass || v.BusBW != tt.busbw {
				t.Errorf("verdict %+v", v)
			}
			if tt.want != "" && !strings.Contains(strings.Join(v.Reasons, "\n"), tt.want) {
				t.Errorf("reasons %q, want %q", v.Reasons, tt.want)
			}
		})
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{8: "8B", 1024: "1K", 8589934592: "8G", 10737418240: "10G", 3000: "3000B"} {
		if got := FormatSize(n); got != want {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
}

// TestNonFiniteJSON checks that nan/inf in an output cannot make the JSON
// report unencodable (encoding/json refuses NaN and Inf).
func TestNonFiniteJSON(t *testing.T) {
	in := "# nThread 1 nGpus 2 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n" +
		"           8             2     float     sum      -1     0.00     inf     nan      0     0.00    -nan    -inf      0\n" +
		"# Out of bounds values : 0 OK\n# Avg bus bandwidth    : nan\n"
	runs, err := Parse(strings.NewReader(in))
	if err != nil || len(runs) != 1 || len(runs[0].Rows) != 1 {
		t.Fatalf("runs %+v, %v", runs, err)
	}
	if _, err := json.Marshal(runs); err != nil {
		t.Errorf("marshal: %v", err)
	}
	if v := Judge(runs[0], 0); v.Pass {
		t.Errorf("passed: %+v", v)
	}
}
