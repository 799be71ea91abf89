// Package memlimit is the soft memory limit a command of gpuform sets for
// itself while its live heap is small.
//
// The Go collector lets the heap grow to twice what was live after the
// last collection (GOGC=100). A command whose live heap stays small but
// whose garbage comes in bursts, such as facts, where a fleet's probe
// outputs arrive together, peaks at about twice its live heap: most of its
// peak RSS beside the binary's own pages. A soft limit (runtime/debug's
// SetMemoryLimit) makes the collector run earlier instead, while the heap
// is below it. But a limit below what must stay live makes the collector
// run without end (GOMEMLIMIT=24MiB once cost 2.3 times the CPU of facts
// that held every host's facts), so the policy lifts the limit, for the
// rest of the run, as soon as the live heap after a collection passes a
// threshold: a large fleet's run is collected as it would be without one.
//
// An operator's GOMEMLIMIT in the environment is the operator's call: the
// policy then sets nothing.
package memlimit

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Policy is a soft memory limit held while the live heap is small.
type Policy struct {
	// Limit is the soft limit of the runtime's memory (the heap, stacks
	// and the runtime's own), in bytes, while the policy holds.
	Limit int64
	// LiftAbove is the live heap, in bytes, above which the limit is
	// lifted for the rest of the run.
	LiftAbove uint64
}

// FleetProbe is the policy of gpuform facts: it holds the runtime's memory
// near 17 MiB while the live heap stays under 8 MiB (a fleet of tens of
// hosts probed 32 at a time), and lets a larger heap grow as Go's default
// does.
func FleetProbe() Policy { return Policy{Limit: 17 << 20, LiftAbove: 8 << 20} }

// Lifts reports whether a live heap of live bytes lifts the limit.
func (p Policy) Lifts(live uint64) bool { return live > p.LiftAbove }

// Apply sets the limit, unless getenv("GOMEMLIMIT") is set, and watches
// the live heap after each collection to lift it. The returned function
// stops the watch and puts back the limit there was before; call it when
// the command ends (tests run commands in one process).
func (p Policy) Apply(getenv func(string) string) (restore func()) {
	if getenv("GOMEMLIMIT") != "" || p.Limit <= 0 {
		return func() {}
	}
	w := &watch{policy: p, previous: debug.SetMemoryLimit(-1)}
	w.active = true
	debug.SetMemoryLimit(p.Limit)
	w.arm()
	return w.stop
}

// watch is one Apply's state: whether the limit is still held.
type watch struct {
	policy   Policy
	previous int64

	mu     sync.Mutex
	active bool // the limit is held and the watch re-arms after each GC
}

// sentinel is garbage from the moment it is made; its finalizer runs once
// the collector has found so, after a collection.
type sentinel struct{ _ [16]byte }

// arm makes a sentinel whose finalizer looks at the live heap once the
// next collection is over, and arms the next one.
func (w *watch) arm() {
	s := &sentinel{}
	runtime.SetFinalizer(s, func(*sentinel) { w.afterGC() })
}

func (w *watch) afterGC() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.active {
		return
	}
	if w.policy.Lifts(liveHeap()) {
		w.active = false
		debug.SetMemoryLimit(math.MaxInt64)
		return
	}
	w.arm()
}

func (w *watch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.active = false
	debug.SetMemoryLimit(w.previous)
}

// liveHeap is the heap the last collection found live, in bytes.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
