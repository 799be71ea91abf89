// Package verify judges a node against what its spec promises: it turns
// NVML facts (from the node-side agent in provision/verify/nvmlfacts or the
// nvidia-smi fallback in provision/verify/smi), host facts (fabric manager,
// nvidia-peermem) and nccl-tests results (provision/verify/nccltest) into
// checks with a stable id, a status (pass | fail | skip | error) and the
// observed and expected values. It also owns the threshold catalogue, the
// verification tiers and their time budgets, and the upload of the agent
// binary to a node.
//
// It is not where facts are gathered (the agent and the probes do that),
// nor where reports are rendered (provision/verify/report), nor where a
// spec is read: callers map a spec onto an Expectation, so this package
// knows nothing of HCL.
package verify
