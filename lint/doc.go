// Package lint judges an evaluated gpuform spec before any host is touched:
// it runs a catalogue of rules over a spec.Config and returns findings, each
// anchored at the exact source range of the attribute that causes it.
//
// The engine (Run) applies inline suppressions (# gpuform-ignore: rule --
// reason), the lint block of the spec and an optional .gpuform-lint.hcl, and
// sorts and deduplicates what the rules report. Rules read version facts only
// from the embedded knowledge base in kb, never from literals.
//
// Each rule lives in rule_<name>.go (a small family such as numa_bind_* in
// rule_<family>.go): its declaration, its Check and the helpers only it
// uses; Rules in rule.go is the one table that registers them. Its golden
// cases are testdata/rules/<name>.
//
// It is not a loader (package spec parses and evaluates HCL; its
// diagnostics are never findings and can never be suppressed) and it never
// opens a connection or reads a host: it judges the wish, not the node.
// Rendering lives in diagview, whose Finding and Severity lint's are.
package lint
