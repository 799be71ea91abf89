// Package format renders HCL diagnostics and lint findings for people and
// machines: Terraform-style text with source snippets, one-line compact
// output, the JSON shape of `terraform validate -json` (plus a rule field),
// and SARIF 2.1.0 for code-scanning upload.
//
// Every writer takes plain hcl.Diagnostics and lint findings side by side,
// so `gpuform validate` (diagnostics only) and `gpuform lint` share them. It
// does not decide what to show or which exit code follows; the CLI does.
package format
