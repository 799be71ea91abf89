package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/verify"
)

// notRunDocument is a fleet-tier run over three hosts of one node group:
// gpu01 took part in the multi-node run and passed, gpu02 did not take
// part (the run named other hosts: not run, needed), gpu03 has a check
// left to a deeper tier and one skipped as not applicable.
func notRunDocument() *Document {
	pass := verify.CheckResult{ID: "nvml.gpu_count", Status: verify.StatusPass, Observed: "8", Expected: "8"}
	fleet := verify.CheckResult{ID: "nccl.fleet", Status: verify.StatusPass, Observed: "busbw 400.00 GB/s at 16G", Expected: "busbw >= 300.00 GB/s"}
	missed := verify.CheckResult{ID: "nccl.fleet", Status: verify.StatusNotRun, Needed: true, Expected: "busbw >= 300.00 GB/s",
		Message: "not run: the run named other hosts of the group"}
	deeper := verify.CheckResult{ID: "nccl.single", Status: verify.StatusNotRun, Expected: "busbw >= 400.00 GB/s",
		Message: "not run at -tier quick: single-node nccl-tests run from -tier full"}
	skip := verify.CheckResult{ID: "nvml.ecc_uncorrectable[gpu0]", Status: verify.StatusSkip, Message: "no ECC counters (ECC off or not supported)"}
	return New(testKB, verify.TierFleet, []Host{
		NewHost("gpu01", []verify.CheckResult{pass, fleet}, 0),
		NewHost("gpu02", []verify.CheckResult{pass, missed}, 0),
		NewHost("gpu03", []verify.CheckResult{pass, deeper, skip}, 0),
	})
}

// TestNotRunNeverPasses: a host that did not take part in a run its tier
// needed has not passed, in the summary, the groups, the text report,
// JSON, JUnit and Prometheus; a check left to a deeper tier, or skipped as
// not applicable, is not counted as passed and does not fail its host.
func TestNotRunNeverPasses(t *testing.T) {
	d := notRunDocument()
	if d.OK() {
		t.Error("the document passes with a host that did not take part in a needed run")
	}
	want := Summary{Hosts: 3, HostsFailed: 1, Passed: 4, Skipped: 1, NotRun: 2}
	if d.Summary != want {
		t.Errorf("summary %+v, want %+v", d.Summary, want)
	}
	okByHost := map[string]bool{}
	for _, g := range d.Groups {
		okByHost[g.Hosts] = g.OK
		if g.Hosts == "gpu02" && (len(g.Problems) != 1 || !strings.HasPrefix(g.Problems[0], "nccl.fleet: not run")) {
			t.Errorf("gpu02's problems: %q", g.Problems)
		}
	}
	if okByHost["gpu02"] || !okByHost["gpu01"] || !okByHost["gpu03"] {
		t.Errorf("groups' verdicts: %v, want only gpu02 not ok", okByHost)
	}

	var text bytes.Buffer
	if err := WriteText(&text, d, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"  NOT RUN  nccl.fleet  expected busbw >= 300.00 GB/s",
		"  not run  nccl.single                   expected busbw >= 400.00 GB/s",
		"  skip     nvml.ecc_uncorrectable[gpu0]",
		"Verify failed (tier fleet): 1 of 3 hosts failed; 4 checks passed, 0 failed, 0 errors, 1 skipped, 2 not run.",
	} {
		if !strings.Contains(text.String(), line+"\n") {
			t.Errorf("text report lacks %q:\n%s", line, text.String())
		}
	}

	var js bytes.Buffer
	if err := WriteJSON(&js, d); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Hosts []struct {
			Checks []map[string]any `json:"checks"`
		} `json:"hosts"`
		Summary map[string]int `json:"summary"`
	}
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if c := doc.Hosts[1].Checks[1]; c["status"] != "not run" || c["needed"] != true {
		t.Errorf("JSON of gpu02's nccl.fleet: %v", c)
	}
	if c := doc.Hosts[2].Checks[1]; c["status"] != "not run" || c["needed"] != nil {
		t.Errorf("JSON of gpu03's nccl.single: %v (needed is left out where false)", c)
	}
	if doc.Summary["not_run"] != 2 || doc.Summary["hosts_failed"] != 1 {
		t.Errorf("JSON summary %v", doc.Summary)
	}

	var ju bytes.Buffer
	if err := WriteJUnit(&ju, d); err != nil {
		t.Fatal(err)
	}
	var suites junitSuites
	if err := xml.Unmarshal(ju.Bytes(), &suites); err != nil {
		t.Fatal(err)
	}
	if s := suites.Suites[1]; s.Errors != 1 || s.Cases[1].Error == nil || s.Cases[1].Error.Type != "not run" {
		t.Errorf("JUnit gpu02: %+v", s)
	}
	if s := suites.Suites[2]; s.Errors != 0 || s.Skipped != 2 || s.Cases[1].Skipped == nil || !strings.HasPrefix(s.Cases[1].Skipped.Message, "not run at -tier quick") {
		t.Errorf("JUnit gpu03: %+v", s)
	}

	var prom bytes.Buffer
	if err := WritePrometheus(&prom, d, PrometheusOptions{}); err != nil {
		t.Fatal(err)
	}
	fams := parseProm(t, prom.Bytes())
	for _, tc := range []struct {
		name string
		lbl  map[string]string
		want float64
	}{
		{"gpuform_host_ok", map[string]string{"host": "gpu01"}, 1},
		{"gpuform_host_ok", map[string]string{"host": "gpu02"}, 0},
		{"gpuform_host_ok", map[string]string{"host": "gpu03"}, 1},
		{"gpuform_check_ok", map[string]string{"host": "gpu02", "check": "nccl.fleet"}, 0},
		{"gpuform_check_ok", map[string]string{"host": "gpu03", "check": "nccl.single"}, 1},
		{"gpuform_check_status", map[string]string{"host": "gpu02", "check": "nccl.fleet", "status": "not run"}, 1},
		{"gpuform_check_status", map[string]string{"host": "gpu02", "check": "nccl.fleet", "status": "pass"}, 0},
		{"gpuform_check_status", map[string]string{"host": "gpu03", "check": "nvml.ecc_uncorrectable[gpu0]", "status": "skip"}, 1},
	} {
		if v, ok := promValue(fams, tc.name, tc.lbl); !ok || v != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.lbl, v, ok, tc.want)
		}
	}
}

// TestUnknownStatusBlocks: a status this gpuform does not know fails the
// host (the gate fails closed) and is counted as an error.
func TestUnknownStatusBlocks(t *testing.T) {
	d := New(testKB, verify.TierProbe, []Host{NewHost("gpu01", []verify.CheckResult{{ID: "nvml.gpu_count", Status: "maybe"}}, 0)})
	if d.OK() || d.Summary.Errors != 1 || d.Summary.HostsFailed != 1 {
		t.Errorf("summary %+v, OK %v", d.Summary, d.OK())
	}
}
