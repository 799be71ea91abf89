// Package resource turns one node block of a spec and the facts of one host
// into resources: the driver package, the fabric manager, sysctls, the
// Docker daemon configuration and so on. Each resource knows how to read its
// actual value from facts.Node, how to compare it with the desired value,
// which idempotent steps converge it, what it depends on, and whether a
// change needs a reboot or restarts a service.
//
// Layout: build.go holds Build and the table of builders, one per resource
// type, in the order a plan lists resources (and apply runs them where no
// dependency says otherwise). Each resource type lives in the
// res_<name>.go file named after it (res_sysctl.go, res_driver_package.go,
// res_docker_daemon.go, ...), builder and constructor together. The kinds
// they are made of live apart: files.go (a managed file), packages.go and
// naming.go (a package set and its names), script.go (steps and the
// patterns every value passes), resource.go (the Resource interface and
// Order).
//
// Package resource is not the planner (provision/plan orders and renders
// changes for a fleet) and does not run anything (provision/apply does). It
// builds shell scripts, and builds them only from values that passed a strict
// pattern and then transport.Quote, so nothing from a spec or from facts
// reaches a remote shell unquoted.
package resource
