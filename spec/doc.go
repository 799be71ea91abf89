// Package spec loads a gpuform spec directory (*.gpuform.hcl) into typed Go
// values: it parses HCL, evaluates variables, locals, inventories and module
// outputs, expands dynamic blocks, and decodes node blocks, keeping the source
// range of every value so that every error can point at a line.
//
// It is not where a spec is judged (package lint does that) and it knows
// nothing of hosts, SSH or facts (package provision). Everything it returns
// is plain data; nothing in it touches the network or the filesystem beyond
// reading the spec's own files.
package spec
