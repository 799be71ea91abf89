// Package target is the one path from a spec to the hosts a command acts
// on: it decides which hosts those are (every host of every node block,
// or those named by -target), and runs work on them in parallel over
// fleet.Run with one parallelism default, one probe (with the host's
// become, under the probe time limit) and one progress view. plan, apply,
// facts, lock, import and verify all reach their hosts through it, so a
// hardened host shows every command the same facts.
//
// Package target does not say what to do on a host (the caller's function
// does: diff, apply steps, checks) and does not choose a transport (the
// caller's Connector does, normally provision/connect).
package target
