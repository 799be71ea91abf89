// Package health decides what health mode (verify --local -slurm-drain,
// Slurm's HealthCheckProgram) does with a verify report: which failures
// drain the node at once (the remediation catalogue's reset_gpu, reboot,
// inspect and rma classes, and every failed check without a milder
// class), which performance or link failures must fail a second run
// first (Confirm), which checks do not apply to the node's hardware,
// which Xids are only counted until they repeat (monitor class: NVIDIA
// says restart the application; each event counted once, by its kernel
// line), and whether the circuit breaker lets a drain stand (Held, Admit:
// at most max_drained_share of the fleet, rounded down, even when every
// node drains at once). It keeps the sightings in a state file on the
// node, under a lock, failing closed (Update). The same judgement serves
// the Slurm prolog and epilog gate (verify --local -slurm-prolog,
// -slurm-epilog), whose drains carry their own reasons (GateReason) that
// a passing health check does not lift (Lifts).
//
// It is not the Slurm client (provision/slurm runs scontrol) and judges no
// check itself (provision/verify does).
package health
