package resource

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// IsKeyed reports whether resource name is made of keys that several specs
// may share, each spec owning the keys it declares: a sysctl of one spec
// and another sysctl of a second spec live in the same drop-in. Ownership
// of these is recorded per key (facts.Owners.Keys).
func IsKeyed(name string) bool {
	return name == Sysctl || name == NCCLConf || name == Limits || name == DockerDaemon || name == KernelCmdline
}

// keyShare is how the keys of a keyed resource's file are shared out
// between specs, as one spec plans it.
type keyShare struct {
	// claims is false on a node without an owner (a test's hand-built
	// node): the spec then writes the whole file, as before key records.
	claims bool
	owner  spec.Owner
	res    string
	// mine are the keys recorded under this spec.
	mine map[string]bool
	// others are the keys recorded under other specs.
	others map[string]facts.OwnerRecord
	// wholeFile is KeyedFile.WholeFileRecord; legacy are the keys owned
	// only through a record of the whole resource.
	wholeFile bool
	legacy    map[string]bool
}

// wholeFileRecord reports whether a record of the whole keyed resource res,
// from a gpuform before key records, stands for every key of its file (see
// KeyedFile.WholeFileRecord).
func wholeFileRecord(res string) bool {
	return res == Sysctl || res == Limits || res == KernelCmdline
}

// shareOf reads who owns which key of res on node f, whose file holds
// fileKeys now.
func shareOf(o spec.Owner, f *facts.Node, res string, fileKeys []string) keyShare {
	s := keyShare{claims: o.Claims(), owner: o, res: res, mine: map[string]bool{}, others: map[string]facts.OwnerRecord{}, wholeFile: wholeFileRecord(res), legacy: map[string]bool{}}
	if !s.claims {
		return s
	}
	if f.Owners != nil && f.Owners.Error == "" {
		if _, old := f.Owners.Resources[res]; old {
			for _, k := range fileKeys {
				if _, named := f.Owners.Keys[res][k]; !named {
					s.legacy[k] = true
				}
			}
		}
	}
	for k, rec := range f.Owners.KeyOwners(res, fileKeys) {
		if rec.Spec == o.Spec {
			s.mine[k] = true
		} else {
			s.others[k] = rec
		}
	}
	return s
}

// drop returns, sorted, the keys recorded under this spec that it no
// longer declares: the spec removes them, and only them. In a file shared
// with the operator, a key that only an old whole-resource record gives
// this spec may be the operator's, and stays.
func (s keyShare) drop(want map[string]string) []string {
	var out []string
	for k := range s.mine {
		if s.legacy[k] && !s.wholeFile {
			continue
		}
		if _, ok := want[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// kept returns, sorted, the keys of fileKeys the change leaves exactly as
// they are: another spec's, or nobody's (set by hand, or by a gpuform
// without records), and not declared by this spec.
func (s keyShare) kept(fileKeys []string, want map[string]string) []string {
	var out []string
	dropped := s.drop(want)
	for _, k := range fileKeys {
		if _, declared := want[k]; !declared && !slices.Contains(dropped, k) {
			out = append(out, k)
		}
	}
	return out
}

// header returns the header of the file after the change, naming the spec
// of every key it will hold: this spec's header when it is the only one,
// the other spec's when this spec keeps no key there, or one line naming
// each spec and its keys. what, when not nil, describes a single spec's
// keys (nccl.conf's "the keys …"); tail follows a line naming several.
// "" when no spec will own a key of the file.
func (s keyShare) header(declared, fileKeys []string, what func(keys []string) string, tail string) string {
	want := map[string]string{}
	for _, k := range declared {
		want[k] = ""
	}
	bySpec := map[string][]string{}
	recs := map[string]facts.OwnerRecord{}
	for _, k := range s.kept(fileKeys, want) {
		if rec, ok := s.others[k]; ok {
			bySpec[rec.Spec] = append(bySpec[rec.Spec], k)
			if _, seen := recs[rec.Spec]; !seen {
				recs[rec.Spec] = rec
			}
		}
	}
	if len(declared) > 0 {
		bySpec[s.owner.Spec] = declared
	}
	describe := func(keys []string) string {
		if what == nil {
			return ""
		}
		return what(keys)
	}
	switch len(bySpec) {
	case 0:
		return ""
	case 1:
		if len(declared) > 0 {
			return headerFor(s.owner, describe(declared))
		}
		for name, keys := range bySpec {
			rec := recs[name]
			return headerFor(spec.Owner{Spec: rec.Spec, Origin: spec.Origin{Commit: rec.Commit, Source: rec.Source, AppliedBy: rec.AppliedBy}}, describe(keys))
		}
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(bySpec)) {
		keys := bySpec[name]
		word := "keys "
		if len(keys) == 1 {
			word = "key "
		}
		parts = append(parts, strconv.Quote(oneLine(name))+" ("+word+oneLine(strings.Join(keys, ", "))+")")
	}
	return headerPrefix + ", specs " + strings.Join(parts, ", ") + tail + ". Change the spec that sets a key, not this file.\n"
}

// keyedFile is the KeyedFile of a change that declares want on a file
// holding fileKeys; nil when the node has no owner.
func (s keyShare) keyedFile(want map[string]string, fileKeys []string) *KeyedFile {
	if !s.claims {
		return nil
	}
	return &KeyedFile{Declared: slices.Sorted(maps.Keys(want)), InFile: slices.Clone(fileKeys), WholeFileRecord: s.wholeFile}
}

// editKeyedLines sets, in a file of lines each of which belongs to at
// most one key (keyOf: "" for a comment or a line of no key), the lines of
// each key of order to set[key] (one or more lines, each ending in "\n"),
// where the key's first line is, and removes its other lines and every
// line of a key in drop. Every other line is kept byte for byte; keys not
// in the file yet are appended in order.
func editKeyedLines(cur []byte, keyOf func(line string) string, order []string, set map[string]string, drop []string) string {
	var b strings.Builder
	done := map[string]bool{}
	lines := fstabLines(cur)
	present := map[string]bool{}
	for _, line := range lines {
		present[keyOf(string(line))] = true
	}
	appends := slices.ContainsFunc(order, func(k string) bool { return !present[k] })
	for i, line := range lines {
		k := keyOf(string(line))
		if _, mine := set[k]; k != "" && mine {
			if !done[k] {
				b.WriteString(set[k])
				done[k] = true
			}
			continue
		}
		if k != "" && slices.Contains(drop, k) {
			continue
		}
		b.Write(line)
		// A last line without a newline keeps it so, unless a key's
		// lines follow it.
		if i < len(lines)-1 || cur[len(cur)-1] == '\n' || appends {
			b.WriteByte('\n')
		}
	}
	for _, k := range order {
		if !done[k] {
			b.WriteString(set[k])
		}
	}
	return b.String()
}
