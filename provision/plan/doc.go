// Package plan decides what apply would change on every host of a spec:
// it probes each host once, diffs the node's resources against the facts,
// and renders the result as a Terraform-style text plan, as versioned JSON,
// or as a plan file that apply can later execute only if no host changed
// in between.
//
// Package plan does not change hosts (provision/apply does, reading the
// plan; plan never imports apply) and does not choose hosts:
// provision/target selects and probes them, over the caller's Connector
// (SSH, local or simulated). Run makes the whole plan: besides the probe
// it runs the step checks (Preflight) and, for a node with
// drain = "slurm", reads each host's Slurm state (slurm.go), over the same
// Connector, changing nothing.
package plan
