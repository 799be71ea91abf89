// Package health decides what health mode (verify --local -slurm-drain,
// Slurm's HealthCheckProgram) does with a verify report: which failures
// drain the node at once (the remediation catalogue's reset_gpu, reboot,
// inspect and rma classes, and every failed check without a milder
// class), which Xids are only counted until they repeat (monitor class:
// NVIDIA says restart the application), and whether the circuit breaker
// holds (too much of the fleet already drained by gpuform). It keeps the
// sightings in a state file on the node, under a lock.
//
// It is not the Slurm client (provision/slurm runs scontrol) and judges no
// check itself (provision/verify does).
package health
