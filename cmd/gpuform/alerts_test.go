package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/gpuform/gpuform/internal/promtool"
	"github.com/gpuform/gpuform/provision/verify/alerts"
)

// TestAlerts writes the quickstart's alerting rules, has promtool check
// them, and then has promtool evaluate them over the metrics verify wrote
// for the quickstart's stale node: the driver alert and the failing-check
// alert fire for exactly what verify failed, the hardware alerts stay quiet
// on its healthy GPUs.
func TestAlerts(t *testing.T) {
	t.Parallel()
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	dir := t.TempDir()
	rules := filepath.Join(dir, "gpuform.rules.yml")
	code, out, errOut := runCLIEnv(t, env, "alerts", "-out", rules, "-check-for", "10m", "../../examples/quickstart")
	if code != ExitOK || !strings.Contains(out, rules) {
		t.Fatalf("alerts: exit %d\n%s%s", code, out, errOut)
	}
	promtool.CheckRules(t, rules)
	raw, err := os.ReadFile(rules)
	if err != nil {
		t.Fatal(err)
	}
	var file alerts.File
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	byName := map[string]alerts.Rule{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			byName[r.Alert] = r
		}
	}
	for _, want := range []string{"GPUFormGPUTemperatureHigh", "GPUFormGPUUncorrectableECCErrors", "GPUFormGPURowRemapFailure", "GPUFormGPURowRemapPending", "GPUFormNVLinkDown", "GPUFormDriverNotPinned", "GPUFormCheckFailing"} {
		if _, ok := byName[want]; !ok {
			t.Errorf("no %s rule", want)
		}
	}
	if r := byName["GPUFormCheckFailing"]; r.For != "10m" {
		t.Errorf("GPUFormCheckFailing for %q, want 10m (-check-for)", r.For)
	}

	prom := filepath.Join(dir, "gpuform.prom")
	if code, out, errOut := runCLIEnv(t, env, "verify", "-format", "prometheus", "-out", prom, "../../examples/quickstart"); code != ExitReport {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}

	// The metrics as input series, constant over 30 minutes.
	var series []map[string]string
	for _, name := range []string{"gpuform_check_ok", "gpuform_gpu_info", "gpuform_gpu_temperature_celsius", "gpuform_gpu_ecc_volatile_uncorrected_errors_total", "gpuform_gpu_row_remap_failure", "gpuform_gpu_row_remap_pending", "gpuform_gpu_nvlink_links", "gpuform_gpu_nvlink_links_up"} {
		if len(fams[name].GetMetric()) == 0 {
			t.Fatalf("verify wrote no %s", name)
		}
		for _, m := range fams[name].GetMetric() {
			v := m.GetGauge().GetValue()
			if m.Counter != nil {
				v = m.GetCounter().GetValue()
			}
			series = append(series, map[string]string{"series": seriesName(name, m), "values": strconv.FormatFloat(v, 'f', -1, 64) + "+0x30"})
		}
	}

	labelsOf := func(m *dto.Metric) map[string]string {
		out := map[string]string{}
		for _, l := range m.GetLabel() {
			out[l.GetName()] = l.GetValue()
		}
		return out
	}
	expand := func(r alerts.Rule, labels map[string]string) map[string]any {
		ann := map[string]string{}
		for k, v := range r.Annotations {
			for lk, lv := range labels {
				v = strings.ReplaceAll(v, "{{ $labels."+lk+" }}", lv)
			}
			ann[k] = v
		}
		all := map[string]string{}
		for k, v := range labels {
			all[k] = v
		}
		for k, v := range r.Labels {
			all[k] = v
		}
		return map[string]any{"exp_labels": all, "exp_annotations": ann}
	}

	// What verify failed is what must fire.
	var failing []map[string]any
	for _, m := range fams["gpuform_check_ok"].GetMetric() {
		if m.GetGauge().GetValue() == 0 {
			failing = append(failing, expand(byName["GPUFormCheckFailing"], labelsOf(m)))
		}
	}
	var driver string
	for _, m := range fams["gpuform_gpu_info"].GetMetric() {
		driver = labelsOf(m)["driver_version"]
	}
	if len(failing) == 0 || driver == "" || strings.Contains(byName["GPUFormDriverNotPinned"].Expr, `"`+driver+`"`) {
		t.Fatalf("the stale node should fail checks and run an unpinned driver: %d failing, driver %q", len(failing), driver)
	}
	tests := []map[string]any{
		{"eval_time": "20m", "alertname": "GPUFormDriverNotPinned", "exp_alerts": []map[string]any{
			expand(byName["GPUFormDriverNotPinned"], map[string]string{"host": "sim://hgx-h100-stale", "driver_version": driver}),
		}},
		{"eval_time": "20m", "alertname": "GPUFormCheckFailing", "exp_alerts": failing},
		// Before -check-for has passed nothing fires.
		{"eval_time": "5m", "alertname": "GPUFormCheckFailing", "exp_alerts": []any{}},
	}
	for _, quiet := range []string{"GPUFormGPUTemperatureHigh", "GPUFormGPUUncorrectableECCErrors", "GPUFormGPURowRemapFailure", "GPUFormGPURowRemapPending", "GPUFormNVLinkDown"} {
		tests = append(tests, map[string]any{"eval_time": "20m", "alertname": quiet, "exp_alerts": []any{}})
	}
	unit := map[string]any{
		"rule_files":          []string{rules},
		"evaluation_interval": "1m",
		"tests": []map[string]any{{
			"interval":        "1m",
			"input_series":    series,
			"alert_rule_test": tests,
		}},
	}
	ub, err := yaml.Marshal(unit)
	if err != nil {
		t.Fatal(err)
	}
	unitFile := filepath.Join(dir, "unit.yml")
	if err := os.WriteFile(unitFile, ub, 0o644); err != nil {
		t.Fatal(err)
	}
	promtool.TestRules(t, unitFile)
}

// seriesName writes a series in promtool's input_series notation.
func seriesName(name string, m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+"="+strconv.Quote(l.GetValue()))
	}
	slices.Sort(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}
