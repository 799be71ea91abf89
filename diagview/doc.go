// Package diagview renders HCL diagnostics and lint findings for people and
// machines: Terraform-style text with source snippets, one-line compact
// output, the JSON shape of `terraform validate -json` (plus a rule field),
// and SARIF 2.1.0 for code-scanning upload.
//
// Every writer takes plain hcl.Diagnostics and findings side by side, so
// `gpuform validate` and `gpuform fmt` (diagnostics only) and `gpuform lint`
// share them. It is a top-level package, not part of lint, because
// validate and fmt render spec diagnostics that have nothing to do with
// lint: diagview imports nothing of gpuform but the JSON format_version, and
// lint imports it for the vocabulary of its findings (lint.Finding and
// lint.Severity are diagview's Finding and Severity), so findings reach
// the writers without conversion. It does not decide what to show or which
// exit code follows; the CLI does.
package diagview
