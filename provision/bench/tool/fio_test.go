package tool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFioFixtures parses real fio JSON outputs. Expected values are the
// files' numbers: bw_bytes / 10^6 where fio prints it (3.x), bw (KiB/s)
// × 1024 / 10^6 where it does not (2.x).
func TestFioFixtures(t *testing.T) {
	type job struct {
		name                string
		readMB, writeMB     float64
		readIOPS, writeIOPS float64
	}
	tests := []struct {
		file      string
		jobs      []job
		failsWith string
	}{
		{file: "fio-3.16-randrw-nvme-superbench.json", jobs: []job{
			{"rand_read_write", 348.743777, 348.450387, 85138.890741, 85066.128925},
		}},
		{file: "fio-2.1.4-sequential-pkb.json", jobs: []job{
			{"sequential_write", 0, 68118 * 1024 / 1e6, 0, 133},
			{"sequential_read", 129836 * 1024 / 1e6, 0, 253, 0},
			{"random_write_test", 0, 6443 * 1024 / 1e6, 0, 1610},
			{"random_read_test", 1269 * 1024 / 1e6, 0, 317, 0},
			{"random_read_test_parallel", 1292 * 1024 / 1e6, 0, 323, 0},
		}},
		{file: "fio-2.17-rand16k-gce-pd-pkb.json", jobs: []job{
			{"rand_16k_read_100%-io-depth-1-num-jobs-2", 129386 * 1024 / 1e6, 0, 8086.673998, 0},
			{"rand_16k_write_100%-io-depth-1-num-jobs-2", 0, 39312 * 1024 / 1e6, 0, 2457.017193},
		}},
		{file: "fio-3.28-seqread-nvme-truncated-issue1627.json", failsWith: "fio JSON is cut short"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := ParseFioJSON(open(t, tt.file))
			if tt.failsWith != "" {
				if err == nil || !strings.Contains(err.Error(), tt.failsWith) {
					t.Fatalf("error = %v, want %q", err, tt.failsWith)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.jobs) {
				t.Fatalf("%d jobs, want %d: %+v", len(got), len(tt.jobs), got)
			}
			for i, w := range tt.jobs {
				g := got[i]
				if g.Job != w.name || !near(g.ReadMBps, w.readMB) || !near(g.WriteMBps, w.writeMB) || g.ReadIOPS != w.readIOPS || g.WriteIOPS != w.writeIOPS {
					t.Errorf("job %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

// TestFioErrors: fio's messages without JSON, damaged JSON and failed jobs.
func TestFioErrors(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "fio-3.16-randrw-nvme-superbench.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	tests := []struct{ name, in, wantErr string }{
		{"empty", "", "no fio JSON in the output (empty)"},
		{"fio message only", "fio: file:filesetup.c:1078, func=open, error=No such file or directory\n", "no fio JSON in the output: fio: file:filesetup.c"},
		{"cut", s[:len(s)/2], "cut short"},
		{"job error", strings.Replace(s, `"error" : 0,`, `"error" : 5,`, 1), `fio job "rand_read_write" failed with error 5`},
		{"no jobs", `{"fio version" : "fio-3.16", "jobs" : []}`, `no "jobs"`},
		{"negative", strings.Replace(s, `"bw_bytes" : 348743777`, `"bw_bytes" : -1`, 1), "negative or non-finite"},
		{"not json", "{ this is not json\n", "fio JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseFioJSON(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestFioNoteBeforeJSON: fio prints "note: …" lines before the document
// (a synchronous engine with iodepth > 1); they are skipped.
func TestFioNoteBeforeJSON(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "fio-3.16-randrw-nvme-superbench.json"))
	if err != nil {
		t.Fatal(err)
	}
	in := "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1\n" + string(b)
	got, err := ParseFioJSON(strings.NewReader(in))
	if err != nil || len(got) != 1 || !near(got[0].ReadMBps, 348.743777) {
		t.Fatalf("got %+v, %v", got, err)
	}
}
