package plan

import (
	"encoding/binary"
	"hash/maphash"
	"reflect"
	"sync"
)

// sharedChanges holds one copy of each distinct resource change among the
// hosts of a plan, and of each distinct list of them: the hosts of a
// fleet mostly plan the same changes, and each host's list (the before
// and after values as maps, the steps, the releases) was about 20 kB held
// until the plan is rendered, 20 MB for a thousand hosts. A host whose
// change equals one already held (reflect.DeepEqual: every field, the
// steps' scripts included) points at the held one's maps and slices; a
// host whose whole list equals one already held shares the list. What is
// shared is read only: a plan's changes are never changed in place once
// the host is planned (a failed preflight replaces the host's list). Safe
// for concurrent use.
type sharedChanges struct {
	mu   sync.Mutex
	seed maphash.Seed
	// byHash are the held changes by hash (changeHash), each a pointer
	// into the list of the host that first planned it.
	byHash map[uint64][]*ResourceChange
	// lists are the held lists by the held changes they are made of.
	lists map[string][]ResourceChange
	ids   map[*ResourceChange]uint64
}

// maxSameHash bounds the changes held under one hash, so that a hash many
// different changes fall on costs a bounded number of comparisons.
const maxSameHash = 8

func newSharedChanges() *sharedChanges {
	return &sharedChanges{seed: maphash.MakeSeed(), byHash: map[uint64][]*ResourceChange{},
		lists: map[string][]ResourceChange{}, ids: map[*ResourceChange]uint64{}}
}

// share points hp's changes at the copies already held, and holds those
// not held yet.
func (s *sharedChanges) share(hp *HostPlan) {
	if len(hp.ResourceChanges) == 0 {
		return
	}
	hashes := make([]uint64, len(hp.ResourceChanges))
	for i := range hp.ResourceChanges {
		hashes[i] = s.hash(&hp.ResourceChanges[i])
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := make([]byte, 0, 2*len(hp.ResourceChanges))
	whole := true
	for i := range hp.ResourceChanges {
		rc := &hp.ResourceChanges[i]
		held := s.find(hashes[i], rc)
		switch {
		case held != nil:
			*rc = *held
		case len(s.byHash[hashes[i]]) < maxSameHash:
			held = rc
			s.byHash[hashes[i]] = append(s.byHash[hashes[i]], rc)
			s.ids[rc] = uint64(len(s.ids))
		default:
			whole = false
			continue
		}
		key = binary.AppendUvarint(key, s.ids[held])
	}
	if !whole {
		return
	}
	if l, ok := s.lists[string(key)]; ok {
		hp.ResourceChanges = l
		return
	}
	s.lists[string(key)] = hp.ResourceChanges
}

// find returns the held change equal to rc, nil when none is.
func (s *sharedChanges) find(h uint64, rc *ResourceChange) *ResourceChange {
	for _, held := range s.byHash[h] {
		if reflect.DeepEqual(*held, *rc) {
			return held
		}
	}
	return nil
}

// hash sums up what most often tells two changes apart; equal changes
// hash the same, and reflect.DeepEqual decides.
func (s *sharedChanges) hash(rc *ResourceChange) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(rc.Resource)
	h.WriteByte(0)
	h.WriteString(rc.Path)
	h.WriteByte(byte(rc.Action))
	sum := func(m Attrs) {
		// Map order is random: the entries' hashes are added up.
		var t uint64
		for k, v := range m {
			t += maphash.String(s.seed, k) ^ maphash.String(s.seed, v.Text)*31
		}
		maphash.WriteComparable(&h, [2]uint64{uint64(len(m)), t})
	}
	sum(rc.Before)
	sum(rc.After)
	for _, st := range rc.Steps {
		h.WriteString(st.Description)
		maphash.WriteComparable(&h, [3]int{len(st.Script), len(st.Input), len(st.Check)})
	}
	return h.Sum64()
}
