package dcgm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/nodesh/nodeshtest"
)

func read(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseText(t *testing.T) {
	d, err := Parse(read(t, "dcgmi-diag-deployment-only-dcgm4.1.1-8xV100.txt"))
	if err != nil {
		t.Fatal(err)
	}
	gpus := map[int]string{}
	for i := 0; i < 8; i++ {
		gpus[i] = "Pass"
	}
	want := &Diag{Version: "4.1.1", Driver: "570.124.06", Tests: []Test{{Category: "Deployment", Name: "software", Status: "Pass", GPUs: gpus}}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// envelope wraps the real DCGM 4 test fragment in the document shape of
// testdata/dcgm_diag_schema-dcgm4.6.json (see testdata/README.md).
func envelope(t testing.TB, fragment string) []byte {
	frag := strings.TrimSuffix(strings.TrimSpace(fragment), ",")
	return []byte(`{"DCGM Diagnostic": {"test_categories": [{"category": "Hardware", "tests": [` + frag + `]}]}, "metadata": {"version": "4.0.0"}}`)
}

func TestParseJSON(t *testing.T) {
	frag := string(read(t, "dcgmi-diag-json-dcgm4-fragment-8gpu-diagnostic-test.txt"))
	d, err := Parse(envelope(t, frag))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Tests) != 1 || d.Tests[0].Name != "diagnostic" || d.Tests[0].Status != "Pass" || len(d.Tests[0].GPUs) != 8 || d.Version != "4.0.0" {
		t.Fatalf("parsed %+v", d)
	}
	// Derived failure: GPU 5's result turned to Fail with a warning, and
	// the summary to Fail, as DCGM reports a failed test.
	gpu5 := `"entity_id" : 5,
                                                                "status" : "Pass"`
	if !strings.Contains(frag, gpu5) {
		t.Fatal("fixture changed: GPU 5 result not found")
	}
	failing := strings.Replace(frag, gpu5, `"entity_id" : 5,
                                                                "status" : "Fail", "warnings": [{"warning": "GPU 5 failed the stress", "error_id": 1, "error_category": 1, "error_severity": 1}]`, 1)
	failing = strings.Replace(failing, `"test_summary" :
                                                {
                                                        "status" : "Pass"`, `"test_summary" :
                                                {
                                                        "status" : "Fail"`, 1)
	d, err = Parse(envelope(t, failing))
	if err != nil {
		t.Fatal(err)
	}
	if tt := d.Tests[0]; tt.Status != "Fail" || !cmp.Equal(tt.FailedGPUs(), []int{5}) || !cmp.Equal(tt.Warnings, []string{"GPU 5 failed the stress"}) {
		t.Errorf("failing: %+v", tt)
	}
	// DCGM 3 and older: "DCGM GPU Diagnostic", results keyed by gpu_ids,
	// no test summary (the shape dcgmi/Diag.cpp of
	// https://github.com/NVIDIA/DCGM wrote before its "DCGM 4.0" commit
	// renamed the key and moved results to entity fields).
	old := `{"DCGM GPU Diagnostic": {"test_categories": [{"category": "Integration", "tests": [{"name": "PCIe", "results": [{"gpu_id": 1, "status": "FAIL"}, {"gpu_id": 0, "status": "PASS"}]}]}]}}`
	d, err = Parse([]byte(old))
	if err != nil || d.Tests[0].Status != "Fail" || !cmp.Equal(d.Tests[0].FailedGPUs(), []int{1}) {
		t.Errorf("old format: %+v %v", d, err)
	}
	// DCGM 3.x writes GPU ids as strings: dcgmi/Diag.cpp of v3.3.9 fills
	// "gpu_id" from snprintf("%u") for per-GPU results, and its level-one
	// (software) results carry the warning text under "warnings" inside
	// each warning object. NVIDIA/DCGM issue #139 shows "gpu_id" : "0"
	// from DCGM 3.3.1. This document is built in that shape, not captured;
	// the real DCGM 3 documents (TestPublishedJSONDocuments) are healthy,
	// so this one keeps the failing and level-one warning shapes tested.
	v3 := `{"DCGM GPU Diagnostic": {"test_categories": [
		{"category": "Deployment", "tests": [{"name": "Persistence Mode", "results": [{"gpu_id": 0, "status": "Fail",
			"warnings": [{"warnings": "Persistence mode for GPU 0 is currently disabled.", "error_id": 29}]}]}]},
		{"category": "Integration", "tests": [{"name": "PCIe", "results": [{"gpu_id": "0", "status": "Pass"}, {"gpu_id": "1", "status": "Fail",
			"warnings": [{"warning": "GPU 1 bandwidth too low", "error_id": 50}], "info": "GPU 1 host to device 3.2 GB/s"}]}]},
		{"category": "Stress", "tests": [{"name": "EUD Test", "results": [{"gpu_ids": "0,1", "status": "Skip"}]}]}]}}`
	d, err = Parse([]byte(v3))
	if err != nil {
		t.Fatalf("DCGM 3 string ids: %v", err)
	}
	want3 := []string{"Deployment|Persistence Mode|Fail fail=0 warnings=1", "Integration|PCIe|Fail fail=1 pass=0 warnings=1 info=1", "Stress|EUD Test|Skip skip=0,1"}
	if diff := cmp.Diff(want3, summary(d)); diff != "" {
		t.Errorf("DCGM 3 string ids (-want +got):\n%s", diff)
	}
	if !cmp.Equal(d.Tests[0].Warnings, []string{"Persistence mode for GPU 0 is currently disabled."}) || !cmp.Equal(d.Tests[0].ErrorIDs, []int{29}) {
		t.Errorf("level-one warning: %q %v", d.Tests[0].Warnings, d.Tests[0].ErrorIDs)
	}
	for _, bad := range []string{`{}`, `{"DCGM Diagnostic": 3}`, "no table here"} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestRun(t *testing.T) {
	if _, err := os.Stat("/usr/bin/timeout"); err != nil {
		t.Skip("coreutils timeout(1) not installed")
	}
	text, _ := filepath.Abs(filepath.Join("testdata", "dcgmi-diag-deployment-only-dcgm4.1.1-8xV100.txt"))
	ok := t.TempDir()
	// A stand-in dcgmi that prints the real capture and records its args.
	if err := os.WriteFile(filepath.Join(ok, "dcgmi"), []byte("#!/bin/sh\necho \"$*\" > "+filepath.Join(ok, "args")+"\ncat "+text+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	hang := t.TempDir()
	if err := os.WriteFile(filepath.Join(hang, "dcgmi"), []byte("#!/bin/sh\nsleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := Run(ctx, local.New("n", local.WithEnv(map[string]string{"PATH": ok + ":/usr/bin:/bin"})), 1, 10*time.Second)
	if err != nil || res.Diag == nil || res.Failure != "" || res.Diag.Tests[0].Status != "Pass" {
		t.Fatalf("ok: %+v %v", res, err)
	}
	if args, _ := os.ReadFile(filepath.Join(ok, "args")); strings.TrimSpace(string(args)) != "diag -r 1 -j" {
		t.Errorf("dcgmi called with %q", args)
	}
	res, err = Run(ctx, local.New("n", local.WithEnv(map[string]string{"PATH": t.TempDir() + ":/usr/bin:/bin"})), 1, 10*time.Second)
	if err != nil || !res.NotInstalled {
		t.Errorf("missing: %+v %v", res, err)
	}
	res, err = Run(ctx, local.New("n", local.WithEnv(map[string]string{"PATH": hang + ":/usr/bin:/bin"})), 1, time.Second)
	if err != nil || !strings.Contains(res.Failure, "did not finish") {
		t.Errorf("hang: %+v %v", res, err)
	}
	if _, err := Run(ctx, local.New("n"), 7, time.Second); err == nil {
		t.Error("level 7 accepted")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"DCGM Diagnostic": {"test_categories": [{"category": "c", "tests": [{"name": "t", "results": [{"entity_group": "GPU", "entity_id": 0, "status": "Pass"}], "test_summary": {"status": "Pass"}}]}]}}`))
	f.Add([]byte("|-----  Deployment  --------+-----|\n| software | Pass |\n|   | GPU0: Fail |\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data)
		if err != nil {
			return
		}
		for _, tt := range d.Tests {
			for _, id := range tt.FailedGPUs() {
				if tt.GPUs[id] != "Fail" {
					t.Fatal("FailedGPUs disagrees with GPUs")
				}
			}
		}
	})
}

// TestParseAfterNoise: dcgmi runs through the user's login shell, whose rc
// files may print to stdout first; the JSON after them must still parse.
func TestParseAfterNoise(t *testing.T) {
	doc := envelope(t, string(read(t, "dcgmi-diag-json-dcgm4-fragment-8gpu-diagnostic-test.txt")))
	for name, noise := range map[string]string{
		"lines":           "Loading modules {gcc}\nWelcome\n",
		"without newline": "Welcome ",
	} {
		t.Run(name, func(t *testing.T) {
			d, err := Parse(append([]byte(noise), doc...))
			if err != nil || len(d.Tests) != 1 || d.Tests[0].Status != "Pass" {
				t.Errorf("parse: %v %+v", err, d)
			}
		})
	}
}

// TestDiagScript checks scripts/dcgmi_diag.sh with shellcheck, as it is and
// as sent, and runs it under dash, bash and busybox ash with a stand-in
// dcgmi first on PATH, and without one.
func TestDiagScript(t *testing.T) {
	nodeshtest.Shellcheck(t, map[string]string{
		"dcgmi_diag.sh":      diagScript,
		"sent/dcgmi_diag.sh": nodesh.Script(diagScript, []string{"600", "2"}),
	})
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "argv")
	if err := os.WriteFile(filepath.Join(bin, "dcgmi"), []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" >"+log+"\necho '{}'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sh := range nodeshtest.Shells() {
		t.Run(sh.Name, func(t *testing.T) {
			os.Remove(log)
			cmd := nodeshtest.Command(t, sh, nodesh.Script(diagScript, []string{"600", "2"}))
			cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
			out, err := cmd.CombinedOutput()
			if err != nil || string(out) != "{}\n" {
				t.Errorf("%v: %q", err, out)
			}
			if argv, _ := os.ReadFile(log); string(argv) != "diag\n-r\n2\n-j\n" {
				t.Errorf("dcgmi called with %q, want diag -r 2 -j", argv)
			}
			cmd = nodeshtest.Command(t, sh, nodesh.Script(diagScript, []string{"600", "2"}))
			cmd.Env = []string{"PATH=" + t.TempDir()}
			if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != nodesh.ExitNotFound {
				t.Errorf("without dcgmi: %v, want exit %d", err, nodesh.ExitNotFound)
			}
		})
	}
}
