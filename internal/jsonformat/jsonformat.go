// Package jsonformat holds the one format_version that every JSON document
// gpuform writes carries: validate, lint, plan (and plan files), apply,
// facts (and the facts of each node inside it), verify, version and the
// NVML agent report.
//
// One version for all documents, rather than one per document, lets a
// consumer check a single string whatever command produced the document, and
// keeps the documents from drifting apart in how they are versioned. The
// major number changes when any document removes or retypes a field; the
// minor number when a field is added. A consumer should accept any minor
// version of the major it knows.
//
// It is not where the documents are shaped: each command's package owns its
// JSON types and uses Version.
package jsonformat

import "strings"

// Version is the format_version of every JSON document gpuform writes.
// 2.0 is the release in which documents carry typed values (booleans and
// numbers, not strings) and share this one version string; 2.1 added
// fields only (plan's images, verify's remedy, checked_at, expires_at,
// isolation and outliers, facts' hypervisor and CPU identity, the NVML
// agent's processes) and the bench document; 2.2 added fields and one
// status only (verify's "not run" status and checks[].needed,
// summary.not_run, nics, driver_advisories, gpu.nvml_index and
// nccl_result.not_run; plan's verify_notes); 2.3 added fields only (the
// steps of a plan file carry their check, resource.Step.Check; plan's
// resource_changes[].version_from, releases and version_unresolved; facts'
// offers); 2.4 added documents and fields only (the bundle and bundle
// -check documents, a bundle manifest's enroot_file, the drill's
// checkpoints and checkpoints_not_run, the NVML agent's nvlinks[].errors,
// the burn-in's new checks).
const Version = "2.4"

// Compatible reports whether a document written with format version v can be
// read by this gpuform: the same major number.
func Compatible(v string) bool {
	major, _, _ := strings.Cut(v, ".")
	want, _, _ := strings.Cut(Version, ".")
	return major == want
}

// Major is Version's major number, for error messages ("reads 2.x").
func Major() string {
	major, _, _ := strings.Cut(Version, ".")
	return major
}
