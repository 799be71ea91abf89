// Package facts reads the actual state of a GPU node. It holds the facts
// probe, one POSIX sh script run once per host in a single exec, and the Go
// parser that turns the probe's raw output into a typed, JSON-serialisable
// Node, and renders the facts of many hosts for `gpuform facts`
// (render.go: text and JSON).
//
// The probe only reads: files under an optional root prefix (so the same
// script works on a live node, an unpacked node image, or a simulated node)
// and, on a live root only, a handful of commands (uname, systemctl, rpm).
// All interpretation happens locally in Parse, which never trusts the
// output: truncated or garbled output is an error, not a panic. What the
// probe reads for resources (their config and managed files, directories,
// units, repository packages) is not listed here but declared by each
// resource type (Reads, passed in Options.Reads; resource.Reads() is the
// union), and the probe loops over the declarations.
//
// One reading stays in the shell: containerd's config.toml names
// drop-ins in its top-level imports, which the probe must read in the
// same exec, so an awk program lists that array's strings and the probe
// reads the files they match. It interprets nothing else: the
// containerd_config resource reads the imports again from the bytes with
// its own TOML parser (internal/tomledit) and uses the probe's expansion
// only for a pattern both agree on. Doing it in Go would need a second
// exec, or the gpuform agent on the node.
//
// Package facts is not where desired state is compared with actual state
// (that is plan) nor how commands reach a node (that is transport).
package facts
