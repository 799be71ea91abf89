// Package apply executes a plan: per host it takes a remote lock, runs the
// planned steps in dependency order, stops at the first failed step,
// re-probes the host and reports any resource that still differs; across
// hosts it rolls out in batches with a failure budget, as the spec's
// rollout block says. It renders its report (render.go: text and JSON).
//
// Package apply does not decide what to change (provision/plan does) and
// does not know how hosts are reached (the caller's target.Options do).
package apply
