// Package resource turns one node block of a spec and the facts of one host
// into resources: the driver package, the fabric manager, sysctls, the
// Docker daemon configuration and so on. Each resource knows how to read its
// actual value from facts.Node, how to compare it with the desired value,
// which idempotent steps converge it, what it depends on, and whether a
// change needs a reboot or restarts a service.
//
// Package resource is not the planner (provision/plan orders and renders
// changes for a fleet) and does not run anything (provision/apply does). It
// builds shell scripts, and builds them only from values that passed a strict
// pattern and then transport.Quote, so nothing from a spec or from facts
// reaches a remote shell unquoted.
package resource
