// Package report renders a bench.Report for people and programs: the text
// table (layer | device | measured | expected | % | verdict) in
// Terraform's look, the versioned JSON document, and the SVG chart
// (measured against expected per layer, and the scaling curve against
// ideal) drawn with gonum.org/v1/plot. It measures and judges nothing.
package report
