package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/isolate"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/spec"
)

// simGroup is a node group of 8 simulated hosts, n4 on hgx-h100-slownic,
// whose mpirun stand-in takes delay per run.
func simGroup(t *testing.T, delay string) ([]target.Host, Options) {
	t.Helper()
	state := t.TempDir()
	n := &spec.Node{Name: "train", Verify: &spec.Verify{NCCLTests: []*spec.NCCLTest{{
		Name:         "fleet64",
		Command:      spec.Attr[string]{V: "mpirun -np 64 all_reduce_perf -b 8M -e 8G -f 2 -g 1", Set: true},
		MinBusBWGbps: spec.Attr[float64]{V: 120, Set: true},
	}}}}
	var targets []target.Host
	for i := 1; i <= 8; i++ {
		profile := "hgx-h100-converged"
		if i == 4 {
			profile = "hgx-h100-slownic"
		}
		h := fmt.Sprintf("sim://%s/n%d", profile, i)
		root, err := sim.MaterializeHost(h, state)
		if err != nil {
			t.Fatal(err)
		}
		if delay != "" {
			dir := filepath.Join(root, "var/lib/gpuform-sim/sleep")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "mpirun"), []byte(delay), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		targets = append(targets, target.Host{Host: spec.Host{Name: h}, Node: n})
	}
	o := Options{KB: testKB, Tier: verify.TierFleet, AllowLocal: true, Target: target.Options{Parallelism: 8, Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
		return connect.Open(ctx, h, connect.Options{SimStateDir: state, AllowLocal: true})
	}}}
	return targets, o
}

// The pairs stay inside the tier's budget: with runs of two seconds and
// a budget of five, the re-pairing round that would prove n4 bad cannot
// run, so isolation says it is incomplete because the budget was spent
// and names nobody — round 1 alone cannot tell n3 from n4. (How many
// rounds fit depends on the machine's load; that none past the budget
// starts, and nothing is named, does not.)
func TestIsolationStopsAtBudget(t *testing.T) {
	targets, o := simGroup(t, "2")
	o.Budget = 5 * time.Second
	start := time.Now()
	_, _, isolations := runMultiNode(context.Background(), targets, o)
	took := time.Since(start)
	if len(isolations) != 1 {
		t.Fatalf("%d isolations", len(isolations))
	}
	iso := isolations[0]
	if iso.Complete || !strings.Contains(iso.Incomplete, "budget was spent") || len(iso.Culprits) != 0 {
		t.Errorf("complete %v, incomplete %q, culprits %+v; pairs %+v", iso.Complete, iso.Incomplete, iso.Culprits, iso.Pairs)
	}
	if len(iso.Pairs) > 4 {
		t.Errorf("%d pairs, want at most round 1's 4: %+v", len(iso.Pairs), iso.Pairs)
	}
	if took > o.Budget+3*time.Second {
		t.Errorf("the group run and its isolation took %s, budget %s", took, o.Budget)
	}
	// The hosts of the failing pair are not decided: an error, not a name.
	c := verify.IsolationCheck("fleet64", "sim://hgx-h100-slownic/n4", iso.Result, iso.groupFailed, false)
	if c.Status != verify.StatusError || !strings.Contains(c.Message, "isolation incomplete") {
		t.Errorf("n4: %+v", c)
	}
}

// An engine that checks the hosts first (provision/engine/slurm) judges
// their multi-node checks after the group's run (MultiNode.JudgeHost): a
// run the -deadline ended is not run, needed, on every host, never failed
// on a cut run nor passed; a run that came back is judged.
func TestGroupRunCutByDeadlineIsNotRun(t *testing.T) {
	t.Parallel()
	// Nothing is reached: the engine's launch and names stand in.
	n := &spec.Node{Name: "train", Verify: &spec.Verify{NCCLTests: []*spec.NCCLTest{{
		Name:         "fleet64",
		Command:      spec.Attr[string]{V: "mpirun -np 32 all_reduce_perf -b 8M -e 8G -f 2 -g 1", Set: true},
		MinBusBWGbps: spec.Attr[float64]{V: 120, Set: true},
	}}}}
	var targets []target.Host
	for i := 1; i <= 4; i++ {
		targets = append(targets, target.Host{Host: spec.Host{Name: fmt.Sprintf("n%d", i)}, Node: n})
	}
	o := Options{KB: testKB, Tier: verify.TierFleet, Target: target.Options{Connect: func(context.Context, spec.Host) (transport.Transport, error) {
		return nil, fmt.Errorf("no host is reached")
	}}}
	o.Deadline = time.Now().Add(300 * time.Millisecond)
	ctx, cancel := context.WithDeadline(context.Background(), o.Deadline)
	defer cancel()
	o.LaunchNames = func(_ context.Context, group []target.Host) map[string]string {
		out := map[string]string{}
		for i, h := range group {
			out[h.Host.Name] = fmt.Sprintf("n%d", i+1)
		}
		return out
	}
	o.Launch = func(ctx context.Context, _ target.Host, command string, _ time.Duration) (nccltest.Result, error) {
		<-ctx.Done()
		return nccltest.Result{Command: command}, ctx.Err()
	}
	mn := RunMultiNode(ctx, targets, o)
	placeholder := func() report.Host {
		return report.Host{Host: targets[0].Host.Name, Checks: []verify.CheckResult{{ID: verify.CheckNCCL.Named("fleet64"), Status: verify.StatusNotRun, Needed: true}}}
	}
	for _, tg := range targets {
		h := placeholder()
		h.Host = tg.Host.Name
		mn.JudgeHost(tg, &h, o)
		if c := h.Checks[0]; c.Status != verify.StatusNotRun || !c.Needed || !strings.Contains(c.Message, "-deadline ended the group's run") {
			t.Errorf("%s: %+v", tg.Host.Name, c)
		}
	}
	if len(mn.isolations) != 0 {
		t.Errorf("a cut group run was isolated: %+v", mn.isolations)
	}

	// Without a deadline the same launch's failure is the group's result,
	// judged: failed, not "not run".
	o.Deadline = time.Time{}
	o.Launch = func(_ context.Context, _ target.Host, command string, _ time.Duration) (nccltest.Result, error) {
		return nccltest.Result{Command: command, Failure: "mpirun: exit status 1"}, nil
	}
	isoOff := *targets[0].Node
	isoOff.Verify = &spec.Verify{NCCLTests: targets[0].Node.Verify.NCCLTests, Isolation: spec.Attr[spec.Isolation]{V: spec.IsolationOff, Set: true}}
	for i := range targets {
		targets[i].Node = &isoOff
	}
	mn = RunMultiNode(context.Background(), targets, o)
	h := placeholder()
	mn.JudgeHost(targets[0], &h, o)
	if c := h.Checks[0]; c.Status == verify.StatusNotRun || c.Status == verify.StatusPass || !strings.Contains(c.Message, "exit status 1") {
		t.Errorf("a group run that failed: %+v", c)
	}
	if h.NCCL["fleet64"].Failure == "" {
		t.Errorf("the host's NCCL results lack the group's run: %+v", h.NCCL)
	}
}

// A node the pairs named gets the remediation catalogue's remedy on its
// nccl_isolation check, as every other failed check does: health mode
// drains with that action, which must not read "unknown". The nodes it
// cleared get none.
func TestIsolationCulpritHasRemedy(t *testing.T) {
	t.Parallel()
	iso := groupIsolation{kb: testKB, groupFailed: true}
	iso.Test = "fleet64"
	iso.Hosts = []string{"a", "b", "c"}
	iso.Result.Pairs = []isolate.Pair{
		{Hosts: [2]string{"a", "b"}, Outcome: isolate.Outcome{Ran: true}},
		{Hosts: [2]string{"a", "c"}, Outcome: isolate.Outcome{Ran: true}},
		{Hosts: [2]string{"b", "c"}, Outcome: isolate.Outcome{Ran: true, Pass: true}},
	}
	iso.Result.Culprits = []isolate.Named{{Host: "a", Partners: []string{"b", "c"}, Reason: "failed with every partner"}}
	hosts := []report.Host{{Host: "a"}, {Host: "b"}, {Host: "c"}}
	addIsolationChecks(hosts, []groupIsolation{iso})
	for _, h := range hosts {
		if len(h.Checks) != 1 {
			t.Fatalf("%s: %d checks", h.Host, len(h.Checks))
		}
		c := h.Checks[0]
		switch {
		case h.Host == "a" && (c.Status != verify.StatusFail || c.Remedy == nil || c.Remedy.Action != "inspect"):
			t.Errorf("a: %s, remedy %+v; want fail with the catalogue's inspect", c.Status, c.Remedy)
		case h.Host != "a" && (c.Status != verify.StatusPass || c.Remedy != nil):
			t.Errorf("%s: %s, remedy %+v; want pass with none", h.Host, c.Status, c.Remedy)
		}
	}
}

// A launch the engine could not start (runner.NotLaunched: a pod that
// never started) leaves the group's test not run, needed, on every host,
// with the engine's reason: never failed, never passed, and nothing is
// isolated on a run that never happened, even with isolation "always".
func TestGroupRunNotLaunchedIsNotRun(t *testing.T) {
	t.Parallel()
	n := &spec.Node{Name: "train", Verify: &spec.Verify{
		Isolation: spec.Attr[spec.Isolation]{V: spec.IsolationAlways, Set: true},
		NCCLTests: []*spec.NCCLTest{{
			Name:         "fleet64",
			Command:      spec.Attr[string]{V: "mpirun -np 32 all_reduce_perf -b 8M -e 8G -f 2 -g 1", Set: true},
			MinBusBWGbps: spec.Attr[float64]{V: 120, Set: true},
		}},
	}}
	var targets []target.Host
	for i := 1; i <= 4; i++ {
		targets = append(targets, target.Host{Host: spec.Host{Name: fmt.Sprintf("n%d", i)}, Node: n})
	}
	o := Options{KB: testKB, Tier: verify.TierFleet, Target: target.Options{Connect: func(context.Context, spec.Host) (transport.Transport, error) {
		return nil, fmt.Errorf("no host is reached")
	}}}
	o.LaunchNames = func(_ context.Context, group []target.Host) map[string]string {
		out := map[string]string{}
		for _, h := range group {
			out[h.Host.Name] = h.Host.Name
		}
		return out
	}
	launches := 0
	o.Launch = func(_ context.Context, _ target.Host, command string, _ time.Duration) (nccltest.Result, error) {
		launches++
		return nccltest.Result{Command: command}, NotLaunched(fmt.Errorf("Kubernetes node n3: worker pod did not start within 2s"))
	}
	mn := RunMultiNode(context.Background(), targets, o)
	for _, tg := range targets {
		h := report.Host{Host: tg.Host.Name, Checks: []verify.CheckResult{{ID: verify.CheckNCCL.Named("fleet64"), Status: verify.StatusNotRun, Needed: true}}}
		mn.JudgeHost(tg, &h, o)
		if c := h.Checks[0]; c.Status != verify.StatusNotRun || !c.Needed || !strings.Contains(c.Message, "the engine did not run the group's test: Kubernetes node n3: worker pod did not start within 2s") {
			t.Errorf("%s: %+v", tg.Host.Name, c)
		}
	}
	if launches != 1 || len(mn.isolations) != 0 {
		t.Errorf("%d launch(es), isolations %+v; want the group's one launch and no isolation", launches, mn.isolations)
	}
}
