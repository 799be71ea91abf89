package facts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// OwnersFile is where gpuform records, on each node, which spec manages
// each resource it put there. The probe reads it byte for byte (it is in
// /etc/gpuform, and a write of it checks what the plan saw).
const OwnersFile = "/etc/gpuform/owners.json"

// OwnersFormat is the format_version of OwnersFile this gpuform writes and
// reads; a file of another major version is not guessed at.
const OwnersFormat = "1"

// ownersComment is written into OwnersFile for whoever opens it on the node.
const ownersComment = "Managed by gpuform: the spec that manages each resource gpuform put on this node. " +
	"A spec removes only resources recorded here under its name; to hand one to another spec, " +
	"apply that spec with -take-over RESOURCE."

// OwnerRecord is who manages one resource on a node.
type OwnerRecord struct {
	// Spec is the managing spec's name (gpuform { name }).
	Spec string `json:"spec"`
	// Commit is the spec's git commit when it last changed the resource;
	// "" when the spec is not in git.
	Commit string `json:"commit,omitempty"`
	// Source is where that spec lives: git remote and path, or a directory.
	Source string `json:"source,omitempty"`
	// AppliedBy is user@machine of whoever last changed the resource.
	AppliedBy string `json:"applied_by,omitempty"`
}

// Owners is OwnersFile as the probe read it.
type Owners struct {
	// Resources maps a resource name ("sysctl") to its record.
	Resources map[string]OwnerRecord `json:"resources"`
	// Error says why the file could not be read as owner records; plan
	// then changes nothing on the node rather than guess who owns what.
	Error string `json:"error,omitempty"`
}

type ownersJSON struct {
	Comment       string                 `json:"comment"`
	FormatVersion string                 `json:"format_version"`
	Resources     map[string]OwnerRecord `json:"resources"`
}

// recordText is what a record's fields may hold: they come back from a
// node and are printed in plans and written into file headers.
var recordText = regexp.MustCompile(`^[^\x00-\x1f\x7f]{0,512}$`)

// ParseOwners reads OwnersFile's content. A file that is not owner records
// of this format gives an Owners with Error set.
func ParseOwners(data []byte) *Owners {
	var j ownersJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return &Owners{Error: fmt.Sprintf("not owner records: %v", err)}
	}
	if major, _, _ := strings.Cut(j.FormatVersion, "."); major != OwnersFormat {
		return &Owners{Error: fmt.Sprintf("format_version %q; this gpuform reads %s", j.FormatVersion, OwnersFormat)}
	}
	for name, r := range j.Resources {
		for _, v := range []string{name, r.Spec, r.Commit, r.Source, r.AppliedBy} {
			if !recordText.MatchString(v) {
				return &Owners{Error: fmt.Sprintf("the record of %q holds control characters or is too long", name)}
			}
		}
		if name == "" || r.Spec == "" {
			return &Owners{Error: "a record names no resource or no spec"}
		}
	}
	if j.Resources == nil {
		j.Resources = map[string]OwnerRecord{}
	}
	return &Owners{Resources: j.Resources}
}

// FormatOwners returns the content of OwnersFile holding records: the same
// records always give the same bytes, so an unchanged file is not written.
func FormatOwners(records map[string]OwnerRecord) string {
	j := ownersJSON{Comment: ownersComment, FormatVersion: OwnersFormat, Resources: map[string]OwnerRecord{}}
	for _, k := range slices.Sorted(maps.Keys(records)) {
		j.Resources[k] = records[k]
	}
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		// Strings and maps of strings always marshal.
		panic("facts: owner records not serialisable: " + err.Error())
	}
	return string(b) + "\n"
}

// owners fills Node.Owners from OwnersFile, when the node has one.
func (p *interpreter) owners() {
	c, ok := p.raw.files[OwnersFile]
	if !ok {
		if e, bad := p.raw.errors[OwnersFile]; bad {
			p.n.Owners = &Owners{Error: e}
		}
		return
	}
	p.n.Owners = ParseOwners([]byte(c))
}
