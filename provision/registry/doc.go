// Package registry resolves container image references to the digests a
// lock file records, by asking the image's registry over the OCI
// distribution API with the controller's Docker credentials. It only reads
// manifests: it pulls no layer, pushes nothing, and never hands a
// credential to a node (nodes pull with their own).
package registry
