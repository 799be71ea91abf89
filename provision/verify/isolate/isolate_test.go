package isolate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/hostrange"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// fabric is a fake group: a pair runs at the busbw of its slower node
// (155 GB/s unless set) and passes a floor of 120 GB/s.
type fabric struct {
	speed map[string]float64
	// down nodes cannot be reached: the pair does not run.
	down map[string]bool
	// took is how long each pair takes.
	took time.Duration

	mu   sync.Mutex
	busy map[string]bool
	// overlap records a node that was in two pairs at once.
	overlap []string
}

func (f *fabric) run(ctx context.Context, p [2]string) Outcome {
	f.mu.Lock()
	for _, h := range p {
		if f.busy[h] {
			f.overlap = append(f.overlap, h)
		}
		f.busy[h] = true
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.busy, p[0])
		delete(f.busy, p[1])
		f.mu.Unlock()
	}()
	if f.took > 0 {
		select {
		case <-time.After(f.took):
		case <-ctx.Done():
			return Outcome{Message: "cancelled: " + ctx.Err().Error()}
		}
	}
	if f.down[p[0]] || f.down[p[1]] {
		return Outcome{Message: "unreachable"}
	}
	bw := 155.0
	for _, h := range p {
		if v, ok := f.speed[h]; ok {
			bw = min(bw, v)
		}
	}
	return Outcome{Ran: true, Pass: bw >= 120, BusBW: bw, Floor: 120, Duration: f.took}
}

func hosts(n int) []string {
	var out []string
	for i := 1; i <= n; i++ {
		out = append(out, fmt.Sprintf("n%d", i))
	}
	return out
}

func TestRun(t *testing.T) {
	tests := map[string]struct {
		hosts      []string
		speed      map[string]float64
		down       map[string]bool
		culprits   []string
		stragglers []string
		incomplete string
		maxRounds  int
	}{
		"all healthy": {hosts: hosts(8), maxRounds: 1},
		// The slow-NIC node fails with its neighbour and with a node of a
		// passing pair; its neighbour passes with another node.
		"one slow node": {hosts: hosts(8), speed: map[string]float64{"n4": 77.8}, culprits: []string{"n4"}, maxRounds: 2},
		"first node":    {hosts: hosts(8), speed: map[string]float64{"n1": 77.8}, culprits: []string{"n1"}, maxRounds: 2},
		// Two bad nodes paired together: each fails with a good node too.
		"two bad neighbours":     {hosts: hosts(8), speed: map[string]float64{"n3": 60, "n4": 70}, culprits: []string{"n3", "n4"}, maxRounds: 2},
		"bad nodes in two pairs": {hosts: hosts(8), speed: map[string]float64{"n2": 60, "n7": 70}, culprits: []string{"n2", "n7"}, maxRounds: 2},
		// An odd last node has no neighbour: it meets a good node in round 2.
		"odd group, bad last node": {hosts: hosts(7), speed: map[string]float64{"n7": 50}, culprits: []string{"n7"}, maxRounds: 2},
		"odd group, healthy":       {hosts: hosts(7), maxRounds: 2},
		// Passing the floor but 20 % under the others with every partner.
		"straggler": {hosts: hosts(8), speed: map[string]float64{"n5": 124}, stragglers: []string{"n5"}, maxRounds: 2},
		// Every pair fails: nothing is known good, nobody is named.
		"everything fails": {hosts: hosts(4), speed: map[string]float64{"n1": 50, "n2": 50, "n3": 50, "n4": 50}, incomplete: "no pair passed", maxRounds: 1},
		// A node that cannot be reached proves nothing about its partner.
		"unreachable node": {hosts: hosts(4), down: map[string]bool{"n3": true}, incomplete: "n3 could not be decided", maxRounds: 2},
		// Nothing ran: say why, not that the fabric may be at fault.
		"nothing runs":       {hosts: hosts(4), down: map[string]bool{"n1": true, "n3": true}, incomplete: "no pair could run: unreachable", maxRounds: 1},
		"two nodes, one bad": {hosts: hosts(2), speed: map[string]float64{"n2": 50}, incomplete: "no pair passed", maxRounds: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := &fabric{speed: tc.speed, down: tc.down, busy: map[string]bool{}}
			r := Run(context.Background(), Options{Hosts: tc.hosts, Run: f.run, Deadline: time.Now().Add(time.Minute)})
			var culprits, stragglers []string
			for _, c := range r.Culprits {
				culprits = append(culprits, c.Host)
			}
			for _, s := range r.Stragglers {
				stragglers = append(stragglers, s.Host)
			}
			if diff := cmp.Diff(tc.culprits, culprits, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("culprits (-want +got):\n%s\npairs: %+v", diff, r.Pairs)
			}
			if diff := cmp.Diff(tc.stragglers, stragglers, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("stragglers (-want +got):\n%s\npairs: %+v", diff, r.Pairs)
			}
			if tc.incomplete == "" && !r.Complete || tc.incomplete != "" && (r.Complete || !strings.Contains(r.Incomplete, tc.incomplete)) {
				t.Errorf("complete %v, incomplete %q; want %q", r.Complete, r.Incomplete, tc.incomplete)
			}
			rounds := 0
			for _, p := range r.Pairs {
				rounds = max(rounds, p.Round)
			}
			if rounds > tc.maxRounds {
				t.Errorf("%d rounds, want at most %d: %+v", rounds, tc.maxRounds, r.Pairs)
			}
			if len(f.overlap) > 0 {
				t.Errorf("nodes in two pairs at once: %v", f.overlap)
			}
			// Every named node failed with every partner it had, and the
			// reason lists the partners folded as every host list is
			// (internal/spelling: "n[2-3]", not "n3, n2").
			for _, c := range r.Culprits {
				if want := "failed with every partner (" + hostrange.Fold(c.Partners) + "), each of which"; !strings.HasPrefix(c.Reason, want) {
					t.Errorf("%s: reason %q, want it to start %q", c.Host, c.Reason, want)
				}
				if len(c.Partners) > 1 && strings.Contains(c.Reason, ", n") {
					t.Errorf("%s: partners not folded: %q", c.Host, c.Reason)
				}
				for _, p := range r.Pairs {
					if slices.Contains(p.Hosts[:], c.Host) && p.Pass {
						t.Errorf("%s is named but passed with %v", c.Host, p.Hosts)
					}
				}
			}
		})
	}
}

// A budget too short for the re-pairing round stops after round 1 and
// names nobody: round 1 alone cannot tell which node of a pair is bad.
func TestRunBudget(t *testing.T) {
	f := &fabric{speed: map[string]float64{"n4": 77.8}, busy: map[string]bool{}, took: 30 * time.Millisecond}
	start := time.Now()
	r := Run(context.Background(), Options{Hosts: hosts(8), Run: f.run, Deadline: start.Add(45 * time.Millisecond), Estimate: 30 * time.Millisecond})
	if r.Complete || !strings.Contains(r.Incomplete, "budget was spent") || len(r.Culprits) != 0 {
		t.Fatalf("complete %v, incomplete %q, culprits %v; want incomplete for the budget and no culprit", r.Complete, r.Incomplete, r.Culprits)
	}
	if took := time.Since(start); took > 200*time.Millisecond {
		t.Errorf("isolation ran %s past a 45ms budget", took)
	}
	if len(r.Pairs) != 4 {
		t.Errorf("%d pairs ran, want round 1's 4", len(r.Pairs))
	}
}

// Pairs of a round run at the same time, and cancelling the context stops
// a round in flight.
func TestRunParallelAndCancel(t *testing.T) {
	f := &fabric{busy: map[string]bool{}, took: 50 * time.Millisecond}
	start := time.Now()
	r := Run(context.Background(), Options{Hosts: hosts(8), Run: f.run})
	if took := time.Since(start); took > 150*time.Millisecond || !r.Complete {
		t.Errorf("4 pairs of 50ms took %s (complete %v): the round is not parallel", took, r.Complete)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	f.took = time.Second
	start = time.Now()
	r = Run(ctx, Options{Hosts: hosts(4), Run: f.run})
	if took := time.Since(start); took > 500*time.Millisecond || r.Complete || !strings.Contains(r.Incomplete, "interrupted") {
		t.Errorf("a cancelled isolation took %s, complete %v (%s)", took, r.Complete, r.Incomplete)
	}
}
