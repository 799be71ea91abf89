package memlimit

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func noEnv(string) string { return "" }

// currentLimit reads the soft limit without changing it.
func currentLimit() int64 { return debug.SetMemoryLimit(-1) }

func TestLifts(t *testing.T) {
	p := Policy{Limit: 20 << 20, LiftAbove: 9 << 20}
	for _, c := range []struct {
		live uint64
		want bool
	}{
		{0, false},
		{4 << 20, false},
		{9 << 20, false},
		{9<<20 + 1, true},
		{1 << 30, true},
	} {
		if got := p.Lifts(c.live); got != c.want {
			t.Errorf("Lifts(%d) = %v, want %v", c.live, got, c.want)
		}
	}
}

// TestFleetProbe: facts's limit holds the runtime's memory under 24 MiB
// (the CLI's 40 MB goal less the binary's own pages), lifts before the
// live heap reaches half the limit, where the collector would run all
// the time, and is not so small that Go's start-up heap passes it.
func TestFleetProbe(t *testing.T) {
	p := FleetProbe()
	if p.Limit < 16<<20 || p.Limit > 24<<20 {
		t.Errorf("Limit = %d MiB, want 16–24 MiB", p.Limit>>20)
	}
	if p.LiftAbove == 0 || p.LiftAbove > uint64(p.Limit)/2 {
		t.Errorf("LiftAbove = %d MiB, want above 0 and at most half the limit (%d MiB)", p.LiftAbove>>20, p.Limit>>21)
	}
}

// TestApplyHonoursGOMEMLIMIT: an operator's GOMEMLIMIT is left as it is.
func TestApplyHonoursGOMEMLIMIT(t *testing.T) {
	before := currentLimit()
	restore := Policy{Limit: 512 << 20, LiftAbove: 1 << 40}.Apply(func(k string) string {
		if k == "GOMEMLIMIT" {
			return "1GiB"
		}
		return ""
	})
	if got := currentLimit(); got != before {
		t.Errorf("limit %d with GOMEMLIMIT set, want it left at %d", got, before)
	}
	restore()
	if got := currentLimit(); got != before {
		t.Errorf("limit %d after restore, want %d", got, before)
	}
}

// TestApplyHoldsAndRestores: the limit holds across collections while
// the live heap is under the threshold, and restore puts back the one
// before.
func TestApplyHoldsAndRestores(t *testing.T) {
	before := currentLimit()
	const limit = 768 << 20
	restore := Policy{Limit: limit, LiftAbove: 1 << 40}.Apply(noEnv)
	for range 5 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond) // the finalizer's turn
	}
	if got := currentLimit(); got != limit {
		t.Errorf("limit %d after collections of a small heap, want %d", got, limit)
	}
	restore()
	if got := currentLimit(); got != before {
		t.Errorf("limit %d after restore, want %d", got, before)
	}
}

// TestApplyLiftsAboveThreshold: once a collection finds more live than
// LiftAbove, the limit is lifted for the rest of the run.
func TestApplyLiftsAboveThreshold(t *testing.T) {
	before := currentLimit()
	restore := Policy{Limit: 768 << 20, LiftAbove: 1 << 20}.Apply(noEnv)
	defer restore()
	live := make([][]byte, 16)
	for i := range live {
		live[i] = make([]byte, 256<<10) // 4 MiB live in all
	}
	deadline := time.Now().Add(5 * time.Second)
	for currentLimit() != math.MaxInt64 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	runtime.KeepAlive(live)
	if got := currentLimit(); got != math.MaxInt64 {
		t.Fatalf("limit %d with 4 MiB live over a 1 MiB threshold, want lifted (math.MaxInt64)", got)
	}
	restore()
	if got := currentLimit(); got != before {
		t.Errorf("limit %d after restore, want %d", got, before)
	}
}
