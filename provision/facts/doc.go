// Package facts reads the actual state of a GPU node. It holds the facts
// probe, one POSIX sh script run once per host in a single exec, and the Go
// parser that turns the probe's raw output into a typed, JSON-serialisable
// Node, and renders the facts of many hosts for `gpuform facts`
// (render.go: text and JSON).
//
// The probe only reads: files under an optional root prefix (so the same
// script works on a live node, an unpacked node image, or a simulated node)
// and, on a live root only, a handful of commands (uname, systemctl, rpm).
// All interpretation happens locally in Parse, which never trusts the
// output: truncated or garbled output is an error, not a panic.
//
// Package facts is not where desired state is compared with actual state
// (that is plan) nor how commands reach a node (that is transport).
package facts
