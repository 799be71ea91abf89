package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// A host running a driver NVIDIA's security bulletins list as affected is
// shown, by driver, in the text and JSON reports; one on a fixed release
// is not. It judges no check.
func TestDriverAdvisories(t *testing.T) {
	host := func(name, driver string) Host {
		return Host{Host: name, Checks: []verify.CheckResult{{ID: "nvml.facts", Status: verify.StatusPass}},
			NVML: &nvmlfacts.Report{DriverVersion: driver}}
	}
	d := New(testKB, verify.TierProbe, []Host{host("gpu001", "580.95.05"), host("gpu002", "580.95.05"), host("gpu003", "580.159.03")})
	if len(d.DriverAdvisories) != 1 {
		t.Fatalf("advisories %+v, want one for 580.95.05", d.DriverAdvisories)
	}
	// From kb/data/driver-advisories.tsv, branch 580 rows fixed after
	// 580.95.05 (5703's fixes are in 580.95.05 itself), in table order;
	// 5747's vgpu-host CVE is listed too: the report names every CVE.
	want := []DriverAdvisory{{
		Hosts: "gpu[001-002]", Driver: "580.95.05", FixedIn: "580.159.03",
		CVEs: []string{"CVE-2025-33219", "CVE-2025-33220",
			"CVE-2026-24187", "CVE-2026-24190", "CVE-2026-24192", "CVE-2026-24193", "CVE-2026-24194",
			"CVE-2026-24196", "CVE-2026-24182", "CVE-2026-24197", "CVE-2026-24198", "CVE-2026-24199", "CVE-2025-33221"},
		Bulletins: []string{"5747", "5821"},
	}}
	if diff := cmp.Diff(want, d.DriverAdvisories); diff != "" {
		t.Errorf("advisories (-want +got):\n%s", diff)
	}
	if d.Summary.Failed != 0 || d.Summary.Errors != 0 {
		t.Errorf("an advisory judged a check: %+v", d.Summary)
	}
	var text bytes.Buffer
	if err := WriteText(&text, d, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "running drivers affected by NVIDIA security bulletins") || !strings.Contains(text.String(), "gpu[001-002]: driver 580.95.05") {
		t.Errorf("text report does not show the advisory:\n%s", text.String())
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, d); err != nil {
		t.Fatal(err)
	}
	// Decoded into plain maps so the field names are checked as well as
	// the values: they are the machine report's stable names.
	var back struct {
		DriverAdvisories []map[string]any `json:"driver_advisories"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatalf("JSON report: %v\n%s", err, js.String())
	}
	strs := func(s []string) []any {
		out := make([]any, len(s))
		for i, v := range s {
			out[i] = v
		}
		return out
	}
	wantJSON := []map[string]any{{
		"hosts": "gpu[001-002]", "driver": "580.95.05", "fixed_in": "580.159.03",
		"cves": strs(want[0].CVEs), "bulletins": strs(want[0].Bulletins),
	}}
	if diff := cmp.Diff(wantJSON, back.DriverAdvisories); diff != "" {
		t.Errorf("JSON driver_advisories (-want +got):\n%s", diff)
	}
}
