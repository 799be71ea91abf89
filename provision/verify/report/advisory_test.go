package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

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
	a := d.DriverAdvisories[0]
	if a.Hosts != "gpu[001-002]" || a.Driver != "580.95.05" || a.FixedIn != "580.159.03" ||
		!strings.Contains(strings.Join(a.Bulletins, ","), "5747") || !strings.Contains(strings.Join(a.CVEs, ","), "CVE-2026-24187") {
		t.Errorf("advisory %+v", a)
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
	var back struct {
		DriverAdvisories []DriverAdvisory `json:"driver_advisories"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.DriverAdvisories) != 1 {
		t.Errorf("JSON driver_advisories: %v %s", err, js.String())
	}
}
