package facts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// OwnersFile is where gpuform records, on each node, which spec manages
// each resource it put there. The probe reads it byte for byte (it is in
// /etc/gpuform, and a write of it checks what the plan saw).
const OwnersFile = "/etc/gpuform/owners.json"

// OwnersFormat is the format_version of OwnersFile this gpuform writes when
// the file holds records of keys (Owners.Keys); a file without them is
// written as format "1", which a gpuform from before key records reads as
// well. Both are read; a file of another major version is not guessed at.
const OwnersFormat = "2"

// ownersFormatResources is the format of a file without key records.
const ownersFormatResources = "1"

// ownersComment is written into OwnersFile for whoever opens it on the node.
const ownersComment = "Managed by gpuform: the spec that manages each resource gpuform put on this node. " +
	"A spec removes only resources, and keys of keyed resources (sysctl, limits, kernel_cmdline, nccl_conf, docker_daemon), recorded here under its name; " +
	"to hand one to another spec, apply that spec with -take-over RESOURCE."

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
	// Keys maps a resource made of keys, whose keys several specs may
	// share ("sysctl", "limits", "kernel_cmdline", "nccl_conf",
	// "docker_daemon"), to the
	// record of each key
	// ("vm.swappiness"). A record of such a resource in Resources is of a
	// gpuform from before key records: it stands for every key of the
	// resource's file that Keys does not name (see KeyOwners).
	Keys map[string]map[string]OwnerRecord `json:"keys,omitempty"`
	// Error says why the file could not be read as owner records; plan
	// then changes nothing on the node rather than guess who owns what.
	Error string `json:"error,omitempty"`
}

type ownersJSON struct {
	Comment       string                            `json:"comment"`
	FormatVersion string                            `json:"format_version"`
	Resources     map[string]OwnerRecord            `json:"resources"`
	Keys          map[string]map[string]OwnerRecord `json:"keys,omitempty"`
}

// recordText is what a record's fields may hold: they come back from a
// node and are printed in plans and written into file headers.
var recordText = lazyre.New(`^[^\x00-\x1f\x7f]{0,512}$`)

// ParseOwners reads OwnersFile's content. A file that is not owner records
// of this format gives an Owners with Error set.
func ParseOwners(data []byte) *Owners {
	var j ownersJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return &Owners{Error: fmt.Sprintf("not owner records: %v", err)}
	}
	major, _, _ := strings.Cut(j.FormatVersion, ".")
	if major != OwnersFormat && major != ownersFormatResources {
		return &Owners{Error: fmt.Sprintf("format_version %q; this gpuform reads %s and %s", j.FormatVersion, ownersFormatResources, OwnersFormat)}
	}
	if major == ownersFormatResources && j.Keys != nil {
		return &Owners{Error: fmt.Sprintf("format_version %q has no key records, but the file holds some", j.FormatVersion)}
	}
	for name, r := range j.Resources {
		if msg := badRecord(name, r); msg != "" {
			return &Owners{Error: msg}
		}
	}
	for res, keys := range j.Keys {
		if !recordText.MatchString(res) || res == "" || len(keys) == 0 {
			return &Owners{Error: fmt.Sprintf("the key records of %q name no key, or the name holds control characters", res)}
		}
		for key, r := range keys {
			if msg := badRecord(res+" "+key, r); msg != "" {
				return &Owners{Error: msg}
			}
		}
	}
	if j.Resources == nil {
		j.Resources = map[string]OwnerRecord{}
	}
	return &Owners{Resources: j.Resources, Keys: j.Keys}
}

// badRecord says what is wrong with the record of name, "" when nothing.
func badRecord(name string, r OwnerRecord) string {
	for _, v := range []string{name, r.Spec, r.Commit, r.Source, r.AppliedBy} {
		if !recordText.MatchString(v) {
			return fmt.Sprintf("the record of %q holds control characters or is too long", name)
		}
	}
	if strings.TrimSpace(name) == "" || r.Spec == "" {
		return "a record names no resource, no key or no spec"
	}
	return ""
}

// KeyOwners returns who owns each key of keyed resource res on the node,
// given the keys its file holds now (fileKeys): the key records, and for
// a key of fileKeys without one, the resource's record of a gpuform from
// before key records, which managed the whole file (so the keys it wrote
// stay its own, never another spec's to overwrite nor nobody's to drop).
// A key nobody recorded is not in the map. o may be nil.
func (o *Owners) KeyOwners(res string, fileKeys []string) map[string]OwnerRecord {
	out := map[string]OwnerRecord{}
	if o == nil || o.Error != "" {
		return out
	}
	maps.Copy(out, o.Keys[res])
	if rec, ok := o.Resources[res]; ok {
		for _, k := range fileKeys {
			if _, named := out[k]; !named {
				out[k] = rec
			}
		}
	}
	return out
}

// FormatOwners returns the content of OwnersFile holding the records of
// resources and of keys: the same records always give the same bytes, so an
// unchanged file is not written. A resource without keys left is dropped.
func FormatOwners(records map[string]OwnerRecord, keys map[string]map[string]OwnerRecord) string {
	j := ownersJSON{Comment: ownersComment, FormatVersion: ownersFormatResources, Resources: map[string]OwnerRecord{}}
	for _, k := range slices.Sorted(maps.Keys(records)) {
		j.Resources[k] = records[k]
	}
	for res, recs := range keys {
		if len(recs) == 0 {
			continue
		}
		if j.Keys == nil {
			j.Keys = map[string]map[string]OwnerRecord{}
			j.FormatVersion = OwnersFormat
		}
		j.Keys[res] = maps.Clone(recs)
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
