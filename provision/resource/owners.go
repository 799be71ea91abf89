package resource

import (
	"slices"

	"github.com/gpuform/gpuform/provision/facts"
)

// Names returns the name of every resource type, in plan order: what
// -take-over accepts and verify's spec.<resource> checks document.
func Names() []string {
	var out []string
	for _, b := range builders() {
		out = append(out, b.name)
	}
	return out
}

// IsName reports whether name is a resource type.
func IsName(name string) bool { return slices.Contains(Names(), name) }

// OwnersStep writes facts.OwnersFile with records, atomically and only if
// the file is still what the probe of n read: the step that records which
// spec manages what on the node.
func OwnersStep(records map[string]facts.OwnerRecord, keys map[string]map[string]facts.OwnerRecord, n *facts.Node) (Step, error) {
	return fileWrite{
		desc:    "record the owner of each resource in " + facts.OwnersFile,
		path:    facts.OwnersFile,
		content: facts.FormatOwners(records, keys),
		cur:     currentFile(n, facts.OwnersFile),
	}.step()
}

// ownersReads is what every plan reads back whatever resources it builds:
// the owner records OwnersStep rewrites (facts.Node.Owners is parsed from
// its bytes).
func ownersReads() facts.Reads {
	return facts.Reads{ManagedFiles: []string{facts.OwnersFile}}
}
