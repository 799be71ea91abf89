package slurm

import (
	"strings"
	"testing"
)

// States and reasons as Slurm 22.05's scontrol -o show node prints them.
func TestNodeStates(t *testing.T) {
	for _, tc := range []struct {
		name, state, reason string
		jobs                []string
		out, own, drained   bool
	}{
		{"idle", "IDLE", "", nil, false, false, false},
		{"mixed", "MIXED", "", []string{"3 RUNNING"}, false, false, false},
		{"draining", "MIXED+DRAIN", "gpuform: apply by x", []string{"3 RUNNING"}, true, true, false},
		{"completing", "IDLE+COMPLETING+DRAIN", "gpuform: apply by x", nil, true, true, false},
		{"completing job listed", "IDLE+DRAIN", "gpuform: apply by x", []string{"4 COMPLETING"}, true, true, false},
		{"drained", "IDLE+DRAIN", "gpuform: apply by x", nil, true, true, true},
		{"admin drained", "IDLE+DRAIN", "RMA ticket 4711", nil, true, false, true},
		// Health mode's drain is not apply's to take over or lift.
		{"health mode drained", "IDLE+DRAIN", "gpuform: health: nvml.xid: reboot: fatal XID seen: XID 79 on gpu4", nil, true, false, true},
		{"down", "DOWN", "PSU 2 failed", nil, true, false, true},
		{"down not responding", "DOWN*+DRAIN", "Not responding", nil, true, false, true},
		{"not responding idle", "IDLE+NOT_RESPONDING", "", nil, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := Node{State: tc.state, Reason: tc.reason, Jobs: tc.jobs}
			if n.OutOfService() != tc.out || n.Own() != tc.own || n.Drained() != tc.drained || n.Foreign() != (tc.out && !tc.own) {
				t.Errorf("%s: out %v own %v drained %v foreign %v", n.Describe(), n.OutOfService(), n.Own(), n.Drained(), n.Foreign())
			}
		})
	}
}

// The reason is read whole, without the [user@time] Slurm appends.
func TestParseShow(t *testing.T) {
	out := "NodeName=gpu001 Arch=x86_64 CoresPerSocket=1 CPUAlloc=2 State=MIXED+DRAIN ThreadsPerCore=1 Partitions=test Reason=RMA ticket 4711: GPU3 XID 79, do not use [root@2026-11-30T15:55:08]\n--- jobs\n12 RUNNING\n13 COMPLETING\n"
	n, err := parseShow("gpu001", out)
	if err != nil {
		t.Fatal(err)
	}
	if n.State != "MIXED+DRAIN" || n.Reason != "RMA ticket 4711: GPU3 XID 79, do not use" || strings.Join(n.Jobs, ",") != "12 RUNNING,13 COMPLETING" {
		t.Errorf("%+v", n)
	}
	if d := n.Describe(); !strings.Contains(d, "jobs 12 (RUNNING), 13 (COMPLETING)") {
		t.Errorf("Describe: %s", d)
	}
	if _, err := parseShow("gpu001", "Node gpu001 not found\n"); err == nil {
		t.Error("no State= accepted")
	}
}

// Reasons gpuform writes start with its prefix and stay on one short line.
func TestReason(t *testing.T) {
	r := Reason("apply failed: step 3\nE: " + strings.Repeat("x", 300))
	if !strings.HasPrefix(r, "gpuform: apply failed: step 3 E: ") || len(r) > maxReason || strings.Contains(r, "\n") {
		t.Errorf("%q", r)
	}
}

func TestParseFleet(t *testing.T) {
	// Shapes of scontrol -o show nodes lines (Slurm 23.11), shortened.
	out := `NodeName=gpu001 Arch=x86_64 CoresPerSocket=1 State=IDLE ThreadsPerCore=1 Reason=(null)
NodeName=gpu002 Arch=x86_64 State=DOWN+DRAIN+NOT_RESPONDING Reason=gpuform: kernel.xid: reboot: Xid 79 [root@2026-11-30T02:14:00]
NodeName=gpu003 State=IDLE+DRAIN Reason=RMA ticket 4711 [admin@2026-11-29T10:00:00]
`
	var nodes []Node
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimPrefix(l, "NodeName="), " ")
		n, err := parseShow(name, l)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	if got := DrainedByGpuform(nodes); got != 1 {
		t.Errorf("DrainedByGpuform = %d, want 1 (gpu002; gpu003 is an admin's)", got)
	}
}

// The reason's time and the node's comment, as Slurm 23.11 prints them
// (Comment= after Reason=).
func TestParseShowReasonTimeAndComment(t *testing.T) {
	n, err := parseShow("gpu003", "NodeName=gpu003 State=IDLE+DRAIN+NOT_RESPONDING Partitions=test Reason=gpuform: health: y [root@2026-12-01T19:44:57] Comment=gpuform: health: circuit breaker open: z\n--- jobs\n")
	if err != nil {
		t.Fatal(err)
	}
	if n.Reason != "gpuform: health: y" || n.Comment != "gpuform: health: circuit breaker open: z" || n.ReasonTime.Format("2006-01-02T15:04:05") != "2026-12-01T19:44:57" || strings.Join(n.Partitions, ",") != "test" {
		t.Errorf("%+v", n)
	}
	n, _ = parseShow("gpu004", "NodeName=gpu004 State=IDLE ExtSensorsTemp=n/s Comment=note\n--- jobs\n")
	if n.Reason != "" || n.Comment != "note" || !n.ReasonTime.IsZero() {
		t.Errorf("%+v", n)
	}
}

// DrainedByGpuform counts the nodes out of service with a reason gpuform
// set.
func DrainedByGpuform(nodes []Node) int {
	n := 0
	for _, x := range nodes {
		if x.Own() && x.OutOfService() {
			n++
		}
	}
	return n
}
