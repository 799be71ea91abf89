package health

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/slurm"
)

func TestLimit(t *testing.T) {
	for _, tc := range []struct {
		size  int
		share float64
		want  int
	}{
		// 10 % of 20 is 2: the third drain is refused (the old breaker's
		// "share <= limit" test let 3 of 20 through).
		{20, 0.1, 2},
		{5, 0.1, 0},
		{10, 0.3, 3}, // 0.3 × 10 is 2.9999999999999996 in floating point
		{1, 1, 1},
		{0, 0.5, 0},
	} {
		if got := Limit(tc.size, tc.share); got != tc.want {
			t.Errorf("Limit(%d, %g) = %d, want %d", tc.size, tc.share, got, tc.want)
		}
	}
}

func drained(name, reason string, at time.Time) slurm.Node {
	return slurm.Node{Name: name, State: "IDLE+DRAIN", Reason: reason, ReasonTime: at}
}

// The order every node computes alike: the drain's time, then the name;
// only health mode's drains of the fleet count.
func TestAdmit(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	p := Policy{KB: testKB, MaxDrainedShare: 0.1}
	fleet := map[string]bool{}
	var nodes []slurm.Node
	for i := 1; i <= 20; i++ {
		name := fmt.Sprintf("gpu%03d", i)
		fleet[name] = true
		nodes = append(nodes, slurm.Node{Name: name, State: "IDLE"})
	}
	// 300 CPU nodes drained by health mode elsewhere are not the fleet.
	for i := 1; i <= 300; i++ {
		nodes = append(nodes, drained(fmt.Sprintf("cpu%03d", i), ReasonPrefix+"x", t0.Add(-time.Hour)))
	}
	set := func(name string, n slurm.Node) {
		for i := range nodes {
			if nodes[i].Name == name {
				n.Name = name
				nodes[i] = n
			}
		}
	}
	own := ReasonPrefix + "kernel.xid: reboot: Xid 79"
	// An admin's drain, apply's drain and a DOWN node do not take health
	// mode's headroom.
	set("gpu001", drained("", "RMA 4711", t0.Add(-time.Hour)))
	set("gpu002", drained("", "gpuform: apply failed: step 3", t0.Add(-time.Hour)))
	set("gpu003", slurm.Node{State: "DOWN", Reason: "Not responding"})
	// Five nodes drained in the same second: the names break the tie.
	for _, n := range []string{"gpu015", "gpu009", "gpu011", "gpu010", "gpu020"} {
		set(n, drained("", own, t0))
	}
	for _, tc := range []struct {
		self  string
		keep  bool
		ahead int
	}{
		{"gpu009", true, 0},
		{"gpu010", true, 1},
		{"gpu011", false, 2},
		{"gpu020", false, 4},
	} {
		a := Admit(tc.self, nodes, fleet, p)
		if a.Keep != tc.keep || len(a.Ahead) != tc.ahead || a.Fleet != 20 || a.Limit != 2 || a.Lost {
			t.Errorf("Admit(%s) = %+v, want keep %v with %d ahead in a fleet of 20 allowing 2", tc.self, a, tc.keep, tc.ahead)
		}
	}
	// An earlier drain comes first whatever its name.
	set("gpu019", drained("", own, t0.Add(-time.Second)))
	if a := Admit("gpu010", nodes, fleet, p); a.Keep || strings.Join(a.Ahead, ",") != "gpu019,gpu009" {
		t.Errorf("after an earlier drain of gpu019: %+v", a)
	}
	// A drain whose time Slurm did not print counts as the earliest.
	set("gpu018", drained("", own, time.Time{}))
	if a := Admit("gpu009", nodes, fleet, p); a.Keep || a.Ahead[0] != "gpu018" {
		t.Errorf("a drain of unknown time: %+v", a)
	}
	// A node whose drain someone else replaced has lost it.
	if a := Admit("gpu001", nodes, fleet, p); !a.Lost || a.Keep {
		t.Errorf("admin-drained self: %+v", a)
	}
	// Before draining: with the limit held, no drain at all.
	if a := Held("gpu004", nodes, fleet, p); a.Keep || len(a.Ahead) != 7 {
		t.Errorf("Held = %+v", a)
	}
	if msg := Admit("gpu020", nodes, fleet, p).Open(p); !strings.Contains(msg, "of the fleet's 20 GPU nodes") || !strings.Contains(msg, "allows 2") {
		t.Errorf("Open: %s", msg)
	}
}

// Whatever the order in which N simultaneous drains become visible to the
// others' reads, no more than Limit keep theirs: each node reads after
// every drain stamped no later than its own is visible (the settle wait),
// and may see any subset of the later ones.
func TestAdmitNeverExceedsLimit(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	p := Policy{KB: testKB, MaxDrainedShare: 0.1}
	const n = 20
	fleet := map[string]bool{}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("gpu%03d", n-i) // drained in reverse name order
		fleet[names[i]] = true
	}
	for seed := range 200 {
		// Drain times: up to three to a second.
		at := make([]time.Time, n)
		for i := range at {
			at[i] = t0.Add(time.Duration((i+seed%3)/3) * time.Second)
		}
		kept := 0
		for i := range n {
			var nodes []slurm.Node
			for j := range n {
				// Visible: every drain stamped no later than this one,
				// and a pseudo-random part of the later ones.
				if !at[j].After(at[i]) || (seed*31+j*17+i*7)%5 < seed%5 {
					nodes = append(nodes, drained(names[j], ReasonPrefix+"x", at[j]))
				} else {
					nodes = append(nodes, slurm.Node{Name: names[j], State: "IDLE"})
				}
			}
			if Admit(names[i], nodes, fleet, p).Keep {
				kept++
			}
		}
		if kept != 2 {
			t.Fatalf("seed %d: %d of %d simultaneous drains kept, want 2", seed, kept, n)
		}
	}
}
