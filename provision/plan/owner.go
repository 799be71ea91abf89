package plan

import (
	"errors"
	"fmt"
	"maps"
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

// OwnershipError is a resource the spec declares that another spec
// manages on the host.
type OwnershipError struct {
	// Resource is the resource's name.
	Resource string
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
	return fmt.Sprintf("%s is managed by spec %s%s, and spec %s declares it too: two specs would undo each other's changes. "+
		"Remove it from one spec, or hand it to spec %s with: gpuform apply -take-over %s",
		e.Resource, strconv.Quote(e.Owner.Spec), applied, strconv.Quote(e.Spec), strconv.Quote(e.Spec), e.Resource)
}

// own fits the changes of a node to what its spec manages on the host
// (see the README's Ownership section):
//   - a resource the spec no longer declares is removed only when the
//     host's records say this spec manages it; otherwise it is left alone;
//   - a resource the spec declares that another spec manages is an
//     OwnershipError, unless this run takes it over;
//   - a declared resource found without a record is adopted, and a taken
//     over one changes hands: both show ManagedBy before -> after;
//   - when records change, the last change writes facts.OwnersFile.
func own(o spec.Owner, changes []ResourceChange, f *facts.Node) ([]ResourceChange, error) {
	recs := map[string]facts.OwnerRecord{}
	if f.Owners != nil {
		if f.Owners.Error != "" {
			return nil, fmt.Errorf("%s cannot be read (%s): gpuform does not change a host whose owner records it cannot read; fix or remove the file", facts.OwnersFile, f.Owners.Error)
		}
		maps.Copy(recs, f.Owners.Resources)
	}
	mine := facts.OwnerRecord{Spec: o.Spec, Commit: o.Commit, Source: o.Source, AppliedBy: o.AppliedBy}
	next := maps.Clone(recs)
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
	if maps.Equal(recs, next) {
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
	st, err := resource.OwnersStep(next, f)
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
	out[ManagedBy] = Value{Text: spec, Kind: resource.String}
	return out
}
