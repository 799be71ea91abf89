package drill

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/provision/verify/alerts"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/spec"
)

// promtoolTimeout bounds one promtool test rules run.
const promtoolTimeout = time.Minute

// failedAlert is how promtool test rules names an alert_rule_test whose
// alerts differ from those expected.
var failedAlert = lazyre.New(`(?m)alertname: ([A-Za-z0-9_:]+), time:`)

// PromtoolAlerts returns the drill's alert evaluation: the spec's rules for
// node (gpuform alerts), over the metrics verify -format prometheus
// writes for a drill node (named as the spec's host, which the rules
// select), held for longer than any rule's for:, as promtool test rules
// evaluates them. Each rule is tested expecting no alert; promtool
// names those that fired. "" and nil when promtool is not installed.
func PromtoolAlerts(cfg *spec.Config, node *spec.Node, dir string) (AlertsFunc, string) {
	bin, err := exec.LookPath("promtool")
	if err != nil {
		return nil, "not evaluated: promtool is not installed (Prometheus's promtool evaluates the rules of gpuform alerts)"
	}
	var group *alerts.Group
	file := alerts.Rules(cfg, alerts.Options{})
	for i := range file.Groups {
		if file.Groups[i].Name == "gpuform_"+node.Name {
			group = &file.Groups[i]
		}
	}
	if group == nil || len(node.Hosts) == 0 {
		return nil, "not evaluated: the node block has no alerting rules"
	}
	host := node.Hosts[0].Name
	return func(ctx context.Context, name string, doc *report.Document) ([]string, error) {
		work := filepath.Join(dir, name)
		if err := os.Mkdir(work, 0o700); err != nil {
			return nil, err
		}
		d := *doc
		d.Hosts = slices.Clone(doc.Hosts)
		for i := range d.Hosts {
			d.Hosts[i].Host = host
		}
		var prom bytes.Buffer
		if err := report.WritePrometheus(&prom, &d, report.PrometheusOptions{}); err != nil {
			return nil, err
		}
		series, err := inputSeries(prom.Bytes())
		if err != nil {
			return nil, err
		}
		var rules bytes.Buffer
		if err := alerts.Write(&rules, alerts.File{Groups: []alerts.Group{*group}}); err != nil {
			return nil, err
		}
		rulesFile := filepath.Join(work, "rules.yml")
		if err := os.WriteFile(rulesFile, rules.Bytes(), 0o600); err != nil {
			return nil, err
		}
		// Past every rule's for: (gpuform alerts' defaults: 5m, 15m).
		const eval = "30m"
		var tests []map[string]any
		for _, r := range group.Rules {
			tests = append(tests, map[string]any{"eval_time": eval, "alertname": r.Alert, "exp_alerts": []any{}})
		}
		unit, err := yaml.Marshal(map[string]any{
			"rule_files":          []string{rulesFile},
			"evaluation_interval": "1m",
			"tests":               []map[string]any{{"interval": "1m", "input_series": series, "alert_rule_test": tests}},
		})
		if err != nil {
			return nil, err
		}
		unitFile := filepath.Join(work, "unit.yml")
		if err := os.WriteFile(unitFile, unit, 0o600); err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(ctx, promtoolTimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, "test", "rules", unitFile).CombinedOutput()
		var fired []string
		for _, m := range failedAlert.Get().FindAllSubmatch(out, -1) {
			if a := string(m[1]); !slices.Contains(fired, a) {
				fired = append(fired, a)
			}
		}
		switch {
		case err == nil && len(fired) == 0:
			return nil, nil
		case err != nil && len(fired) > 0:
			// Rule order: the specific alerts before GPUFormCheckFailing.
			slices.SortStableFunc(fired, func(a, b string) int {
				return ruleIndex(group, a) - ruleIndex(group, b)
			})
			return fired, nil
		}
		return nil, fmt.Errorf("promtool test rules: %v: %s", err, strings.TrimSpace(string(limitOutput(out))))
	}, "promtool test rules"
}

func ruleIndex(g *alerts.Group, name string) int {
	return slices.IndexFunc(g.Rules, func(r alerts.Rule) bool { return r.Alert == name })
}

func limitOutput(b []byte) []byte {
	if len(b) > 2000 {
		return b[:2000]
	}
	return b
}

// inputSeries turns a Prometheus exposition into promtool's input
// series, each value held for 60 minutes.
func inputSeries(exposition []byte) ([]map[string]string, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(exposition))
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []map[string]string
	for _, name := range names {
		for _, m := range fams[name].GetMetric() {
			v := m.GetGauge().GetValue()
			if m.Counter != nil {
				v = m.GetCounter().GetValue()
			}
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			slices.Sort(labels)
			out = append(out, map[string]string{"series": name + "{" + strings.Join(labels, ",") + "}", "values": strconv.FormatFloat(v, 'f', -1, 64) + "+0x60"})
		}
	}
	return out, nil
}
