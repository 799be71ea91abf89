package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpuform/gpuform/internal/promtool"
)

// TestVerifyPrometheus writes the quickstart's verify as a textfile
// collector file: atomically (nothing else left in the directory), valid
// for promtool, with the failing checks at 0.
func TestVerifyPrometheus(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := t.TempDir()
	out := filepath.Join(dir, "gpuform.prom")
	// A stale file from an earlier run is replaced whole.
	writeFile(t, out, "stale\n")
	code, stdout, errOut := runCLIEnv(t, env, "verify", "-format", "prometheus", "-out", out, "../../examples/quickstart")
	if code != ExitReport {
		t.Fatalf("exit %d, want 2\n%s%s", code, stdout, errOut)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Errorf("the directory holds %v (%v), want only gpuform.prom", entries, err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	fams := parseExposition(t, b)
	ok := checkOK(t, fams)
	// The stale node runs an old driver with no fabric manager.
	if v, found := ok["nvml.driver_version"]; !found || v != 0 {
		t.Errorf("nvml.driver_version ok = %v (%v), want 0", v, found)
	}
	if v, found := ok["nvml.gpu_count"]; !found || v != 1 {
		t.Errorf("nvml.gpu_count ok = %v (%v), want 1", v, found)
	}
	for _, name := range []string{"gpuform_gpu_temperature_celsius", "gpuform_gpu_pcie_link_width_lanes", "gpuform_gpu_nvlink_links_up", "gpuform_knowledge_base_date_timestamp_seconds", "gpuform_verify_duration_seconds"} {
		if len(fams[name].GetMetric()) == 0 {
			t.Errorf("no %s", name)
		}
	}
	if n := len(fams["gpuform_gpu_temperature_celsius"].GetMetric()); n != 8 {
		t.Errorf("%d GPU temperatures, want 8", n)
	}
	promtool.CheckMetrics(t, b)

	// Without -out the metrics go to standard output.
	code, stdout, _ = runCLIEnv(t, env, "verify", "-format", "prometheus", "../../examples/quickstart")
	if code != ExitReport {
		t.Errorf("stdout: exit %d, want 2\n%s", code, stdout)
	}
	stdFams := parseExposition(t, []byte(stdout))
	if typ := stdFams["gpuform_check_ok"].GetType(); typ != dto.MetricType_GAUGE {
		t.Errorf("stdout: gpuform_check_ok is a %v, want a gauge", typ)
	}
	stdOK := checkOK(t, stdFams)
	// The same stale node: its old driver fails, its GPU count passes.
	want := map[string]float64{"nvml.driver_version": 0, "nvml.gpu_count": 1}
	got := map[string]float64{}
	for check := range want {
		if v, found := stdOK[check]; found {
			got[check] = v
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stdout: gpuform_check_ok (-want +got):\n%s", diff)
	}
	// And every check the file had, with the same value.
	if diff := cmp.Diff(ok, stdOK); diff != "" {
		t.Errorf("stdout and -out differ in gpuform_check_ok (-file +stdout):\n%s", diff)
	}
	// A directory that does not exist is refused before the run.
	code, _, errOut = runCLIEnv(t, env, "verify", "-format", "prometheus", "-out", filepath.Join(dir, "missing", "x.prom"), "../../examples/quickstart")
	if code != ExitFailed || !bytes.Contains([]byte(errOut), []byte("-out")) {
		t.Errorf("missing dir: exit %d\n%s", code, errOut)
	}
}

// parseExposition parses a Prometheus text exposition, failing the test
// when it is not one.
func parseExposition(t *testing.T, b []byte) map[string]*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a text exposition: %v\n%s", err, b)
	}
	return fams
}

// checkOK reads gpuform_check_ok by check id; every series must be the
// stale simulated host's.
func checkOK(t *testing.T, fams map[string]*dto.MetricFamily) map[string]float64 {
	t.Helper()
	ok := map[string]float64{}
	for _, m := range fams["gpuform_check_ok"].GetMetric() {
		var check, host string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "check":
				check = l.GetValue()
			case "host":
				host = l.GetValue()
			}
		}
		if host != "sim://hgx-h100-stale" {
			t.Errorf("check %s has host %q", check, host)
		}
		ok[check] = m.GetGauge().GetValue()
	}
	return ok
}
