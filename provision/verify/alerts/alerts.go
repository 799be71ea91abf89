// Package alerts derives Prometheus alerting rules from a spec: the limits
// verify judges a node by (temperature, ECC, row remapping, NVLink, the
// pinned driver, any failing check), written against the metrics of
// `gpuform verify -format prometheus` so that Prometheus keeps judging a
// node between verify runs' reports.
package alerts

import (
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"

	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/spec"
)

// File is a Prometheus rule file.
type File struct {
	// Groups are the rule groups, one per node block.
	Groups []Group `yaml:"groups"`
}

// Group is one rule group.
type Group struct {
	// Name is "gpuform_" and the node's label.
	Name string `yaml:"name"`
	// Rules are the group's alerting rules.
	Rules []Rule `yaml:"rules"`
}

// Rule is one alerting rule.
type Rule struct {
	// Alert is the alert's name.
	Alert string `yaml:"alert"`
	// Expr is the PromQL expression; every series it returns fires.
	Expr string `yaml:"expr"`
	// For is how long Expr must hold before the alert fires; "" fires at once.
	For string `yaml:"for,omitempty"`
	// Labels are added to the alert (severity, gpuform_node).
	Labels map[string]string `yaml:"labels"`
	// Annotations describe the alert for people.
	Annotations map[string]string `yaml:"annotations"`
}

// Options tune the derived rules.
type Options struct {
	// CheckFailingFor is how long a verify check must fail before
	// GPUFormCheckFailing fires; 0 means 15 minutes.
	CheckFailingFor time.Duration
	// For is how long a hardware condition must hold before its alert
	// fires; 0 means 5 minutes.
	For time.Duration
}

// Rules derives the rules of every node block of cfg. A node without
// hosts gets no group: there is no series to match.
func Rules(cfg *spec.Config, o Options) File {
	if o.CheckFailingFor <= 0 {
		o.CheckFailingFor = 15 * time.Minute
	}
	if o.For <= 0 {
		o.For = 5 * time.Minute
	}
	f := File{Groups: []Group{}}
	for _, n := range cfg.Nodes {
		if len(n.Hosts) == 0 {
			continue
		}
		f.Groups = append(f.Groups, Group{Name: "gpuform_" + n.Name, Rules: nodeRules(n, o)})
	}
	return f
}

func nodeRules(n *spec.Node, o Options) []Rule {
	exp := verify.ExpectationFor(n)
	sel := hostSelector(n)
	hw := promDuration(o.For)
	labels := func(sev string) map[string]string {
		return map[string]string{"severity": sev, "gpuform_node": n.Name}
	}
	var out []Rule
	if exp.MaxTemperatureC > 0 && !exp.Sensitive[string(verify.CheckTemperature)] {
		out = append(out, Rule{
			Alert:  "GPUFormGPUTemperatureHigh",
			Expr:   fmt.Sprintf("gpuform_gpu_temperature_celsius{%s} > %d", sel, exp.MaxTemperatureC),
			For:    hw,
			Labels: labels("warning"),
			Annotations: map[string]string{
				"summary":     "GPU {{ $labels.gpu }} ({{ $labels.pci_bus_id }}) of {{ $labels.host }} is above the spec's max_temperature_c",
				"description": fmt.Sprintf("GPU {{ $labels.gpu }} ({{ $labels.pci_bus_id }}) of {{ $labels.host }} runs at {{ $value }} °C; node %q allows at most %d °C (verify { nvml { max_temperature_c } }).", n.Name, exp.MaxTemperatureC),
			},
		})
	}
	out = append(out,
		Rule{
			Alert:  "GPUFormGPUUncorrectableECCErrors",
			Expr:   fmt.Sprintf("gpuform_gpu_ecc_volatile_uncorrected_errors_total{%s} > 0", sel),
			Labels: labels("critical"),
			Annotations: map[string]string{
				"summary":     "GPU {{ $labels.gpu }} ({{ $labels.pci_bus_id }}) of {{ $labels.host }} has uncorrectable ECC errors",
				"description": "GPU {{ $labels.gpu }} ({{ $labels.pci_bus_id }}) of {{ $labels.host }} counted {{ $value }} uncorrectable ECC errors since the driver loaded; drain the node and follow NVIDIA's GPU memory error recovery.",
			},
		},
		Rule{
			Alert:  "GPUFormGPURowRemapFailure",
			Expr:   fmt.Sprintf("gpuform_gpu_row_remap_failure{%s} == 1", sel),
			Labels: labels("critical"),
			Annotations: map[string]string{
				"summary":     "GPU {{ $labels.gpu }} ({{ $labels.pci_bus_id }}) of {{ $labels.host }} failed a row remap",
				"description": "The row remapper of GPU {{ $labels.gpu }} ({{ $labels.pci_bus_id }}) on {{ $labels.host }} failed: NVIDIA says the GPU needs service.",
			},
		},
		Rule{
			Alert:  "GPUFormGPURowRemapPending",
			Expr:   fmt.Sprintf("gpuform_gpu_row_remap_pending{%s} == 1", sel),
			For:    hw,
			Labels: labels("warning"),
			Annotations: map[string]string{
				"summary":     "GPU {{ $labels.gpu }} ({{ $labels.pci_bus_id }}) of {{ $labels.host }} waits for a reset to remap rows",
				"description": "A row remap of GPU {{ $labels.gpu }} ({{ $labels.pci_bus_id }}) on {{ $labels.host }} is pending: reset the GPU (or reboot) when its jobs allow.",
			},
		},
	)
	if exp.NVLink == verify.NVLinkAllActive {
		out = append(out, Rule{
			Alert:  "GPUFormNVLinkDown",
			Expr:   fmt.Sprintf("gpuform_gpu_nvlink_links_up{%s} < gpuform_gpu_nvlink_links{%s}", sel, sel),
			For:    hw,
			Labels: labels("critical"),
			Annotations: map[string]string{
				"summary":     "NVLink down on GPU {{ $labels.gpu }} ({{ $labels.pci_bus_id }}) of {{ $labels.host }}",
				"description": fmt.Sprintf("GPU {{ $labels.gpu }} ({{ $labels.pci_bus_id }}) of {{ $labels.host }} has only {{ $value }} NVLink links up; node %q wants every link active (verify { nvml { nvlink = \"all_active\" } }).", n.Name),
			},
		})
	}
	if exp.DriverVersion != "" && !exp.Sensitive[string(verify.CheckDriverVersion)] {
		out = append(out, Rule{
			Alert:  "GPUFormDriverNotPinned",
			Expr:   fmt.Sprintf("count by (host, driver_version) (gpuform_gpu_info{%s,driver_version!=%s}) > 0", sel, strconv.Quote(exp.DriverVersion)),
			Labels: labels("warning"),
			Annotations: map[string]string{
				"summary":     "{{ $labels.host }} runs driver {{ $labels.driver_version }}, not the pinned " + exp.DriverVersion,
				"description": fmt.Sprintf("Node %q pins NVIDIA driver %s; {{ $labels.host }} runs {{ $labels.driver_version }}. Run gpuform plan to see the change.", n.Name, exp.DriverVersion),
			},
		})
	}
	// A textfile keeps its last pass forever when verify stops running;
	// past its expires_at it proves nothing.
	out = append(out, Rule{
		Alert:  "GPUFormVerifyResultExpired",
		Expr:   fmt.Sprintf("time() > gpuform_verify_expires_timestamp_seconds{%s}", sel),
		Labels: labels("warning"),
		Annotations: map[string]string{
			"summary":     "gpuform verify's result for {{ $labels.host }} has expired",
			"description": "The last gpuform verify result of {{ $labels.host }} is older than its health { valid_for }: verify has stopped running there, and its last pass must not be trusted.",
		},
	})
	out = append(out, Rule{
		Alert:  "GPUFormCheckFailing",
		Expr:   fmt.Sprintf("gpuform_check_ok{%s} == 0", sel),
		For:    promDuration(o.CheckFailingFor),
		Labels: labels("warning"),
		Annotations: map[string]string{
			"summary":     "gpuform verify check {{ $labels.check }} fails on {{ $labels.host }}",
			"description": fmt.Sprintf("The verify check {{ $labels.check }} has failed on {{ $labels.host }} for %s; run gpuform verify -target {{ $labels.host }} for the details.", promDuration(o.CheckFailingFor)),
		},
	})
	return out
}

// hostSelector matches the host label against the node's hosts exactly.
// PromQL strings take Go's escapes, so strconv.Quote keeps the regexp's
// backslashes.
func hostSelector(n *spec.Node) string {
	names := make([]string, 0, len(n.Hosts))
	for _, h := range n.Hosts {
		names = append(names, regexp.QuoteMeta(h.Name))
	}
	if len(names) == 1 {
		return "host=" + strconv.Quote(n.Hosts[0].Name)
	}
	return "host=~" + strconv.Quote(strings.Join(names, "|"))
}

// promDuration writes d as Prometheus does ("15m", "1h30m"); Go's
// "15m0s" is not one of its durations in every release.
func promDuration(d time.Duration) string { return model.Duration(d).String() }

// Write writes f as YAML, with a header saying where it came from.
func Write(w io.Writer, f File) error {
	if _, err := io.WriteString(w, "# Prometheus alerting rules derived from the gpuform spec by `gpuform alerts`.\n# They read the metrics of `gpuform verify -format prometheus` (docs/guide/verify.md: Prometheus metrics and alerts).\n"); err != nil {
		return err
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return err
	}
	return enc.Close()
}
