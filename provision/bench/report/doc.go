// Package report renders a bench.Report for people and programs: the text
// table (layer | device | measured | expected | % | verdict) in
// Terraform's look, the versioned JSON document, and the chart drawn with
// gonum.org/v1/plot as SVG or PNG (chart.go): one panel per question for
// each host, "which layer is below expectation?" (each layer's lowest
// device as a share of its expected figure, the bottleneck in red with its
// value, the rest muted, a line at 100 %) and "does it scale?" (the curve
// against its expectation, legends under the data), readable 800 px wide.
// It measures and judges nothing.
package report
