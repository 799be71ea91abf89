// Package isolate finds the bad node of a node group whose multi-node test
// failed or was slow: it runs the same test on pairs of nodes in parallel
// rounds, re-pairs each node of a failing (or slow) pair with a node of a
// passing pair, and names a node only when it failed with every partner and
// at least one of those partners passed with another node — the second pass
// Google's Cluster Health Scanner makes and the neighbour tests of
// ByteDance's MegaScale. Nodes slow with every partner while passing the
// floor are named as stragglers (provision/outlier).
//
// Package isolate decides which pairs to run and what their outcomes
// prove; it does not launch tests or judge one run against a floor: the
// caller's RunFunc does both (provision/verify/runner rewrites the group's
// command for two hosts and judges it against the 2-node floor). It never
// claims a culprit it did not prove: when the budget runs out or no pair
// passes, the result says the isolation is incomplete and why.
package isolate
