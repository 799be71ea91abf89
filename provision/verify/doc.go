// Package verify judges a node against what its spec promises: it turns
// NVML facts (from the node-side agent in provision/verify/nvmlfacts or the
// nvidia-smi fallback in provision/verify/smi), host facts (fabric manager,
// nvidia-peermem) and nccl-tests results (provision/verify/nccltest) into
// checks with a stable id, a status (pass | fail | skip | error) and the
// observed and expected values. Every check is declared once in Checks()
// (checks.go: id, what it reads, how it judges, what to do) and judged in
// the check_<subject>.go file of its subject; CHECKS.md's table is that
// declaration rendered, kept in step by a test. It maps a decoded spec node onto an
// Expectation (ExpectationFor), and owns the verification tiers and their
// time budgets and the upload of the agent binary to a node. NCCL floors
// come from the knowledge base (kb).
//
// It is not where facts are gathered (the agent and the probes do that),
// nor where reports are rendered (provision/verify/report), nor where a
// spec is loaded or evaluated (package spec does that): it reads the
// decoded spec.Node only, and knows nothing of HCL.
package verify
