package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
	// Each host's checks by the JSON fields that carry the verdict; needed
	// is left out where false.
	var gotChecks [][]map[string]any
	for _, h := range doc.Hosts {
		var cs []map[string]any
		for _, c := range h.Checks {
			v := map[string]any{}
			for _, k := range []string{"id", "status", "needed", "message"} {
				if x, ok := c[k]; ok {
					v[k] = x
				}
			}
			cs = append(cs, v)
		}
		gotChecks = append(gotChecks, cs)
	}
	gpuCount := map[string]any{"id": "nvml.gpu_count", "status": "pass"}
	wantChecks := [][]map[string]any{
		{gpuCount, {"id": "nccl.fleet", "status": "pass"}},
		{gpuCount, {"id": "nccl.fleet", "status": "not run", "needed": true, "message": "not run: the run named other hosts of the group"}},
		{gpuCount, {"id": "nccl.single", "status": "not run", "message": "not run at -tier quick: single-node nccl-tests run from -tier full"},
			{"id": "nvml.ecc_uncorrectable[gpu0]", "status": "skip", "message": "no ECC counters (ECC off or not supported)"}},
	}
	if diff := cmp.Diff(wantChecks, gotChecks); diff != "" {
		t.Errorf("JSON checks by host (-want +got):\n%s", diff)
	}
	wantSummary := map[string]int{"hosts": 3, "hosts_failed": 1, "passed": 4, "failed": 0, "errors": 0, "skipped": 1, "not_run": 2}
	if diff := cmp.Diff(wantSummary, doc.Summary); diff != "" {
		t.Errorf("JSON summary (-want +got):\n%s", diff)
	}

	var ju bytes.Buffer
	if err := WriteJUnit(&ju, d); err != nil {
		t.Fatal(err)
	}
	var suites junitSuites
	if err := xml.Unmarshal(ju.Bytes(), &suites); err != nil {
		t.Fatal(err)
	}
	// The suites and their cases by what CI reads: counts, and each case's
	// outcome (the element it carries, with its type) and message.
	type caseView struct{ Name, Outcome, Message string }
	type suiteView struct {
		Name                             string
		Tests, Failures, Errors, Skipped int
		Cases                            []caseView
	}
	var gotSuites []suiteView
	for _, s := range suites.Suites {
		v := suiteView{Name: s.Name, Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Skipped: s.Skipped}
		for _, c := range s.Cases {
			cv := caseView{Name: c.Name, Outcome: "pass"}
			switch {
			case c.Failure != nil:
				cv.Outcome, cv.Message = "failure "+c.Failure.Type, c.Failure.Message
			case c.Error != nil:
				cv.Outcome, cv.Message = "error "+c.Error.Type, c.Error.Message
			case c.Skipped != nil:
				cv.Outcome, cv.Message = "skipped", c.Skipped.Message
			}
			v.Cases = append(v.Cases, cv)
		}
		gotSuites = append(gotSuites, v)
	}
	passCount := caseView{Name: "nvml.gpu_count", Outcome: "pass"}
	wantSuites := []suiteView{
		{Name: "gpu01", Tests: 2, Cases: []caseView{passCount, {Name: "nccl.fleet", Outcome: "pass"}}},
		{Name: "gpu02", Tests: 2, Errors: 1, Cases: []caseView{passCount,
			{Name: "nccl.fleet", Outcome: "error not run", Message: "not run: the run named other hosts of the group"}}},
		{Name: "gpu03", Tests: 3, Skipped: 2, Cases: []caseView{passCount,
			{Name: "nccl.single", Outcome: "skipped", Message: "not run at -tier quick: single-node nccl-tests run from -tier full"},
			{Name: "nvml.ecc_uncorrectable[gpu0]", Outcome: "skipped", Message: "no ECC counters (ECC off or not supported)"}}},
	}
	if diff := cmp.Diff(wantSuites, gotSuites); diff != "" {
		t.Errorf("JUnit suites (-want +got):\n%s", diff)
	}
	if suites.Tests != 7 || suites.Failures != 0 || suites.Errors != 1 {
		t.Errorf("JUnit testsuites: %d tests, %d failures, %d errors; want 7, 0, 1", suites.Tests, suites.Failures, suites.Errors)
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
