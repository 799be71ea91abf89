package plan

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/spec"
)

// ManagedBy is the attribute a change shows when it changes which spec
// manages the resource: a resource found without an owner record and
// adopted, or one taken over from another spec.
const ManagedBy = "managed_by"

// noRecord is ManagedBy's before value for a resource nobody recorded.
const noRecord = "(no record)"

// OwnershipError is a resource, or a key of a keyed resource, the spec
// declares that another spec manages on the host.
type OwnershipError struct {
	// Resource is the resource's name.
	Resource string
	// Key is the key of a keyed resource (resource.IsKeyed); "" for a
	// whole resource.
	Key string
	// Spec is this spec's name.
	Spec string
	// Owner is the record of the spec that manages it.
	Owner facts.OwnerRecord
}

func (e *OwnershipError) Error() string {
	from := []string{}
	if e.Owner.Source != "" {
		from = append(from, "from "+e.Owner.Source)
	}
	if e.Owner.Commit != "" {
		from = append(from, "at commit "+e.Owner.Commit)
	}
	if e.Owner.AppliedBy != "" {
		from = append(from, "by "+e.Owner.AppliedBy)
	}
	applied := ""
	if len(from) > 0 {
		applied = " (applied " + strings.Join(from, " ") + ")"
	}
	what := e.Resource
	if e.Key != "" {
		what = e.Resource + " key " + e.Key
	}
	return fmt.Sprintf("%s is managed by spec %s%s, and spec %s declares it too: two specs would undo each other's changes. "+
		"Remove it from one spec, or hand it to spec %s with: gpuform apply -take-over %s",
		what, strconv.Quote(e.Owner.Spec), applied, strconv.Quote(e.Spec), strconv.Quote(e.Spec), e.Resource)
}

// own fits the changes of a node to what its spec manages on the host
// (see docs/guide/plan-and-apply.md, "Ownership: which spec manages what"):
//   - a resource the spec no longer declares is removed only when the
//     host's records say this spec manages it; otherwise it is left alone;
//   - a resource the spec declares that another spec manages is an
//     OwnershipError, unless this run takes it over;
//   - a declared resource found without a record is adopted, and a taken
//     over one changes hands: both show ManagedBy before -> after;
//   - a keyed resource (resource.IsKeyed) is owned key by key: the same
//     rules hold for each key it declares, so specs may share its file,
//     and the records of its keys are kept per key (see ownKeys);
//   - when records change, the last change writes facts.OwnersFile.
func own(o spec.Owner, changes []ResourceChange, f *facts.Node) ([]ResourceChange, error) {
	recs := map[string]facts.OwnerRecord{}
	keyRecs := map[string]map[string]facts.OwnerRecord{}
	if f.Owners != nil {
		if f.Owners.Error != "" {
			return nil, fmt.Errorf("%s cannot be read (%s): gpuform does not change a host whose owner records it cannot read; fix or remove the file", facts.OwnersFile, f.Owners.Error)
		}
		maps.Copy(recs, f.Owners.Resources)
		for res, keys := range f.Owners.Keys {
			keyRecs[res] = maps.Clone(keys)
		}
	}
	mine := facts.OwnerRecord{Spec: o.Spec, Commit: o.Commit, Source: o.Source, AppliedBy: o.AppliedBy}
	next := maps.Clone(recs)
	nextKeys := map[string]map[string]facts.OwnerRecord{}
	for res, keys := range keyRecs {
		nextKeys[res] = maps.Clone(keys)
	}
	declared := map[string]bool{}
	var out []ResourceChange
	var errs []error
	for _, rc := range changes {
		if !resource.IsName(rc.Resource) {
			// A repair gpuform adds by itself (an interrupted dpkg)
			// belongs to no spec.
			out = append(out, rc)
			continue
		}
		if resource.IsKeyed(rc.Resource) && rc.Keys == nil {
			// Recording it whole would hide every other spec's keys.
			errs = append(errs, fmt.Errorf("%s: planned without its keys, so its ownership cannot be recorded per key (a bug in gpuform)", rc.Resource))
			continue
		}
		if rc.Keys != nil {
			keep, err := ownKeys(o, mine, &rc, f.Owners, next, nextKeys)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if keep {
				out = append(out, rc)
			}
			continue
		}
		rec, recorded := recs[rc.Resource]
		if rc.Action == resource.Delete {
			if recorded && rec.Spec == o.Spec {
				delete(next, rc.Resource)
				out = append(out, rc)
			}
			continue
		}
		declared[rc.Resource] = true
		switch {
		case recorded && rec.Spec == o.Spec:
			if rc.Action != resource.NoOp {
				next[rc.Resource] = mine
			}
		case recorded && !o.TakesOver(rc.Resource):
			errs = append(errs, &OwnershipError{Resource: rc.Resource, Spec: o.Spec, Owner: rec})
			continue
		case recorded || rc.Before != nil:
			// Taken over, or found on the host without a record.
			from := noRecord
			if recorded {
				from = rec.Spec
			}
			rc.Before, rc.After = withAttr(rc.Before, from), withAttr(rc.After, o.Spec)
			if rc.Action == resource.NoOp {
				rc.Action = resource.Update
			}
			next[rc.Resource] = mine
		default:
			next[rc.Resource] = mine
		}
		out = append(out, rc)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if maps.Equal(recs, next) && keyRecordsEqual(keyRecs, nextKeys) {
		return out, nil
	}
	// Records of this spec for resources it neither declares nor removes
	// (gone from the host by other hands) go with the write.
	for res, rec := range next {
		if rec.Spec == o.Spec && !declared[res] {
			delete(next, res)
		}
	}
	last := -1
	for i, rc := range out {
		if rc.Action != resource.NoOp {
			last = i
		}
	}
	if last < 0 {
		return out, nil
	}
	st, err := resource.OwnersStep(next, nextKeys, f)
	if err != nil {
		return nil, err
	}
	out[last].Steps = append(append([]resource.Step(nil), out[last].Steps...), st)
	return out, nil
}

// withAttr returns a copy of a with ManagedBy set to spec.
func withAttr(a Attrs, spec string) Attrs {
	out := make(Attrs, len(a)+1)
	maps.Copy(out, a)
	out[ManagedBy] = Value{Value: resource.StringVal(spec)}
	return out
}

// ownKeys applies own's rules to keyed resource rc key by key: a key it
// declares that another spec's record names is an OwnershipError naming
// the key (unless taken over); its declared keys are recorded under mine,
// and its keys it no longer declares lose their record. A record of the
// whole resource from a gpuform before key records keeps other specs off
// the keys the file holds (facts.Owners.KeyOwners); in gpuform's own
// drop-in it becomes records of those keys, in a file shared with the
// operator it stays until its own spec applies (see
// resource.KeyedFile.WholeFileRecord). keep is false for a removal of the
// file this spec may not make.
func ownKeys(o spec.Owner, mine facts.OwnerRecord, rc *ResourceChange, owners *facts.Owners, next map[string]facts.OwnerRecord, nextKeys map[string]map[string]facts.OwnerRecord) (keep bool, err error) {
	res := rc.Resource
	held := owners.KeyOwners(res, rc.Keys.InFile)
	if rc.Action == resource.Delete {
		// The file goes whole only when every key in it is this spec's.
		for _, k := range rc.Keys.InFile {
			if rec, ok := held[k]; !ok || rec.Spec != o.Spec {
				return false, nil
			}
		}
	}
	var errs []error
	var takenFrom []string
	adopted, recordedMine := false, false
	for _, k := range rc.Keys.Declared {
		rec, ok := held[k]
		switch {
		case ok && rec.Spec == o.Spec:
			recordedMine = true
		case ok && !o.TakesOver(res):
			errs = append(errs, &OwnershipError{Resource: res, Key: k, Spec: o.Spec, Owner: rec})
		case ok:
			if !slices.Contains(takenFrom, rec.Spec) {
				takenFrom = append(takenFrom, rec.Spec)
			}
		default:
			// Found on the host without a record: in the file, or
			// shown as the value the host has now.
			_, found := rc.Before[k]
			adopted = adopted || found || slices.Contains(rc.Keys.InFile, k)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return false, err
	}
	keys := map[string]facts.OwnerRecord{}
	var legacy *facts.OwnerRecord
	if owners != nil {
		maps.Copy(keys, owners.Keys[res])
		if rec, ok := owners.Resources[res]; ok {
			legacy = &rec
		}
	}
	switch {
	case legacy == nil:
	case rc.Keys.WholeFileRecord:
		// gpuform's own drop-in, which that gpuform wrote whole: the
		// record becomes one for every key the file holds.
		maps.Copy(keys, held)
		delete(next, res)
	case legacy.Spec == o.Spec:
		// A file shared with the operator: the spec's declared keys get
		// records below; the others it had may be the operator's, and
		// become nobody's (kept, never removed).
		delete(next, res)
	}
	for k, rec := range keys {
		if rec.Spec == o.Spec && !slices.Contains(rc.Keys.Declared, k) {
			delete(keys, k)
		}
	}
	for _, k := range rc.Keys.Declared {
		rec, ok := keys[k]
		if !ok || rec.Spec != o.Spec || keyChanges(rc, k) {
			keys[k] = mine
		}
	}
	nextKeys[res] = keys
	switch {
	case len(takenFrom) > 0:
		slices.Sort(takenFrom)
		showHandOver(rc, strings.Join(takenFrom, ", "), o.Spec)
	case adopted && !recordedMine:
		// Found on the host without a record.
		showHandOver(rc, noRecord, o.Spec)
	}
	return true, nil
}

// keyChanges reports whether rc changes key k's value.
func keyChanges(rc *ResourceChange, k string) bool {
	b, okB := rc.Before[k]
	a, okA := rc.After[k]
	return okB != okA || b.Text != a.Text
}

// showHandOver shows ManagedBy from -> to on rc, which is then a change.
func showHandOver(rc *ResourceChange, from, to string) {
	rc.Before, rc.After = withAttr(rc.Before, from), withAttr(rc.After, to)
	if rc.Action == resource.NoOp {
		rc.Action = resource.Update
	}
}

// keyRecordsEqual reports whether a and b hold the same key records,
// a resource without keys counting as absent.
func keyRecordsEqual(a, b map[string]map[string]facts.OwnerRecord) bool {
	for res := range a {
		if !maps.Equal(a[res], b[res]) {
			return false
		}
	}
	for res := range b {
		if !maps.Equal(a[res], b[res]) {
			return false
		}
	}
	return true
}
