package slurm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpuform/gpuform/internal/slurmtest"
	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/provision/bench"
	"github.com/gpuform/gpuform/provision/connect"
	"github.com/gpuform/gpuform/provision/engine/slurm"
	enginessh "github.com/gpuform/gpuform/provision/engine/ssh"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/provision/verify/runner"
	"github.com/gpuform/gpuform/spec"
)

// fixture is what every scenario shares: one real Slurm of three nodes
// served on this machine, the gpuform binary sbcast sends, and one
// directory of simulated roots, so the engines verify the same nodes.
type fixture struct {
	cluster *slurmtest.Cluster
	binary  string
	state   string
	kb      *kb.KB
}

// quickstartWith is examples/quickstart with hosts in place of its one
// simulated host, in a directory of its own.
func quickstartWith(t *testing.T, hosts ...string) (string, *spec.Config) {
	t.Helper()
	return quickstartWithB(t, t.TempDir(), hosts...)
}

func kbB(t testing.TB) *kb.KB {
	t.Helper()
	k, err := kb.Load()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func quickstartWithB(t testing.TB, tmp string, hosts ...string) (string, *spec.Config) {
	t.Helper()
	// The same directory name every time: a spec is named after it.
	dir := filepath.Join(tmp, "quickstart")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := "../../../examples/quickstart"
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Replace(string(b), `hosts    = ["sim://hgx-h100-stale"]`, `hosts    = ["`+strings.Join(hosts, `", "`)+`"]`, 1)
		if err := os.WriteFile(filepath.Join(dir, e.Name()), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	k, err := kb.Load()
	if err != nil {
		t.Fatal(err)
	}
	cfg, diags := spec.Load(dir, spec.LoadOptions{BuiltinModules: modules.FS(), GPUModels: k.GPUModelTable()})
	if diags.HasErrors() {
		t.Fatalf("spec: %v", diags)
	}
	return dir, cfg
}

func targetsOf(t *testing.T, cfg *spec.Config) []target.Host {
	t.Helper()
	hosts, diags := target.Select(cfg, nil)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return hosts
}

// checks is a report's checks per host, without durations.
func checks(doc *report.Document) map[string][]verify.CheckResult {
	out := map[string][]verify.CheckResult{}
	for _, h := range doc.Hosts {
		out[h.Host] = h.Checks
	}
	return out
}

// slurmEngine is the engine over the fixture's cluster; a connector
// that counts its calls proves no host is reached from here.
func (f *fixture) slurmEngine(t *testing.T, dir string, cfg *spec.Config, o slurm.Options) (*slurm.Engine, runner.Options, *atomic.Int64) {
	o.Binary = f.binary
	o.Env = append(o.Env, f.cluster.Env(), "GPUFORM_SIM_STATE="+f.state)
	o.Bundle = func(nodes map[string]slurm.BundleNode) (*slurm.Bundle, error) {
		return slurm.NewBundle(cfg, dir, nil, verify.TierProbe, false, nodes)
	}
	var connects atomic.Int64
	ro := runner.Options{Tier: verify.TierProbe, KB: f.kb, Target: target.Options{Connect: func(context.Context, spec.Host) (transport.Transport, error) {
		connects.Add(1)
		return nil, errors.New("the slurm engine must not connect to hosts")
	}}}
	return slurm.New(o), ro, &connects
}

// fleetSpec is four simulated HGX H100 in one node block, gpu006 with a
// NIC at 200 Gb/s: the group's all_reduce falls below its floor, and the
// pairs name gpu006 (the mpirun stand-in slows a run to its slowest NIC).
const fleetSpec = `module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

node "train" {
  hosts    = ["sim://hgx-h100-converged/gpu004", "sim://hgx-h100-converged/gpu005", "sim://hgx-h100-slownic/gpu006", "sim://hgx-h100-converged/gpu007"]
  hardware = module.hgx.hardware
  verify {
    optional = ["dcgm"]
    nccl_test "fleet" {
      command        = "mpirun -np 32 all_reduce_perf -b 8M -e 8G -f 2 -g 1"
      min_busbw_gbps = 120
    }
  }
}
`

// TestSlurmEngine runs the slurm engine against a real slurmctld with
// three slurmd, each node a simulated HGX H100.
func TestSlurmEngine(t *testing.T) {
	for _, b := range []string{"/usr/bin/srun", "/usr/bin/sbcast", "/usr/bin/salloc", "/usr/bin/sinfo"} {
		if _, err := os.Stat(b); err != nil {
			sshtest.Missing(t, "slurm engine: "+b+" is not installed (apt-get install slurm-client; scripts/test.sh installs slurm-wlm)")
		}
	}
	c := slurmtest.Start(t, slurmtest.Options{NodeName: "gpu001", ServedNodes: []string{"gpu002", "gpu003", "gpu004", "gpu005", "gpu006", "gpu007", "gpu008", "gpu009", "gpu010", "gpu011", "gpu012", "gpu013"}})
	bin := filepath.Join(t.TempDir(), "gpuform")
	if out, err := exec.Command("go", "build", "-o", bin, "../../../cmd/gpuform").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	k, err := kb.Load()
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{cluster: c, binary: bin, state: t.TempDir(), kb: k}
	hosts := []string{"sim://hgx-h100-converged/gpu001", "sim://hgx-h100-degraded/gpu002", "sim://hgx-h100-xid79/gpu003"}

	// Four lanes on disjoint nodes run at once (most of a run is
	// waiting: Slurm's steps, the tiers' Xid windows, the deadlines);
	// within a lane the scenarios share nodes and run in turn.
	// reference is the SSH engine's report of hosts on the same
	// simulated nodes, the one the slurm engine must equal.
	reference := func(t *testing.T, hosts []string) (string, *spec.Config, *report.Document) {
		t.Helper()
		dir, cfg := quickstartWith(t, hosts...)
		sshOpts := runner.Options{Tier: verify.TierProbe, KB: k, Target: target.Options{Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
			return connect.Open(ctx, h, connect.Options{SimStateDir: f.state})
		}}}
		want, err := enginessh.Engine{}.Verify(context.Background(), targetsOf(t, cfg), sshOpts)
		if err != nil {
			t.Fatal(err)
		}
		if want.Summary.Failed == 0 || want.Summary.Passed == 0 {
			t.Fatalf("the reference run should pass some checks and fail others (a degraded node): %+v", want.Summary)
		}
		return dir, cfg, want
	}

	t.Run("probe tier on gpu[011-013]", func(t *testing.T) {
		t.Parallel()
		hosts := []string{"sim://hgx-h100-converged/gpu011", "sim://hgx-h100-degraded/gpu012", "sim://hgx-h100-xid79/gpu013"}
		dir, cfg, want := reference(t, hosts)

		t.Run("parity with ssh, and a host that is no Slurm node", func(t *testing.T) {
			dir, cfg := quickstartWith(t, append(hosts, "sim://hgx-h100-converged/gpu099")...)
			limit := &timeLimits{c: c}
			e, ro, connects := f.slurmEngine(t, dir, cfg, slurm.Options{Messages: limit})
			got, err := e.Verify(context.Background(), targetsOf(t, cfg), ro)
			if err != nil {
				t.Fatal(err)
			}
			// The probe tier: two sbcasts of 5m, the 30s budget and the
			// step's minute, the 30s cleanup, a minute's margin.
			if diff := cmp.Diff([]string{"00:13:00"}, limit.seen); diff != "" {
				t.Errorf("the allocation's TimeLimit (-want +got):\n%s", diff)
			}
			if n := connects.Load(); n != 0 {
				t.Errorf("the slurm engine connected to hosts %d time(s)", n)
			}
			gotChecks := checks(got)
			bad := gotChecks["sim://hgx-h100-converged/gpu099"]
			delete(gotChecks, "sim://hgx-h100-converged/gpu099")
			if diff := cmp.Diff(checks(want), gotChecks); diff != "" {
				t.Errorf("-engine slurm differs from -engine ssh (-ssh +slurm):\n%s", diff)
			}
			if len(bad) != 1 || bad[0].ID != string(verify.CheckReachable) || bad[0].Status != verify.StatusFail || !strings.Contains(bad[0].Message, "Slurm has no node gpu099") {
				t.Errorf("the host that is no Slurm node: %+v", bad)
			}
			if got.Summary.Hosts != 4 {
				t.Errorf("report holds %d hosts, want 4", got.Summary.Hosts)
			}
		})

		t.Run("the CLI: gpuform verify -engine slurm -format json", func(t *testing.T) {
			cmd := exec.Command(f.binary, "verify", "-engine", "slurm", "-format", "json", "-slurm-start-timeout", "1m", dir)
			cmd.Env = append(os.Environ(), c.Env(), "GPUFORM_SIM_STATE="+f.state)
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit %v, want 2 (a degraded node fails)\n%s", err, stderr.String())
			}
			var doc report.Document
			if err := json.Unmarshal([]byte(stdout.String()), &doc); err != nil {
				t.Fatalf("%v\n%s", err, stdout.String())
			}
			if diff := cmp.Diff(checks(want), checks(&doc)); diff != "" {
				t.Errorf("gpuform verify -engine slurm differs from -engine ssh (-ssh +cli):\n%s", diff)
			}
			if !strings.Contains(stderr.String(), "Slurm: job ") {
				t.Errorf("stderr does not say which job held the nodes:\n%s", stderr.String())
			}
		})

		t.Run("scoped to a job", func(t *testing.T) {
			out, err := c.Client("sbatch", "--parsable", "-N2", "-w", "gpu[012-013]", "-t", "7", "-o", "/dev/null", "--wrap", "sleep 120")
			if err != nil {
				t.Fatal(err)
			}
			job := strings.TrimSpace(out)
			defer func() { _, _ = c.Client("scancel", job) }()
			waitRunning(t, c, job)
			limit := &timeLimits{c: c}
			e, ro, connects := f.slurmEngine(t, dir, cfg, slurm.Options{Job: job, Messages: limit})
			got, err := e.Verify(context.Background(), targetsOf(t, cfg), ro)
			if err != nil {
				t.Fatal(err)
			}
			// The job's own limit, as sbatch -t 7 set it: a run scoped to
			// a job allocates nothing and leaves the job's limit alone.
			if got, err := jobTimeLimit(c, job); err != nil || got != "00:07:00" {
				t.Errorf("job %s's TimeLimit after the run = %q (%v), want 00:07:00", job, got, err)
			}
			if len(limit.seen) != 0 {
				t.Errorf("a job-scoped run allocated jobs with TimeLimit %v", limit.seen)
			}
			w := checks(want)
			delete(w, hosts[0])
			if diff := cmp.Diff(w, checks(got)); diff != "" {
				t.Errorf("job %s on gpu[012-013] (-want +got):\n%s", job, diff)
			}
			if connects.Load() != 0 {
				t.Error("the slurm engine connected to hosts")
			}
		})
	})
	t.Run("probe tier on gpu[001-003]", func(t *testing.T) {
		t.Parallel()
		dir, cfg, want := reference(t, hosts)

		t.Run("a partition the user cannot use", func(t *testing.T) {
			e, ro, _ := f.slurmEngine(t, dir, cfg, slurm.Options{Partition: "nosuch"})
			_, err := e.Verify(context.Background(), targetsOf(t, cfg), ro)
			if err == nil || !strings.Contains(err.Error(), "-slurm-partition nosuch") {
				t.Errorf("err = %v, want the partition named", err)
			}
		})

		t.Run("sbcast fails", func(t *testing.T) {
			e, ro, _ := f.slurmEngine(t, dir, cfg, slurm.Options{})
			e = f.withBinary(e, dir, cfg, filepath.Join(t.TempDir(), "no-such-gpuform"))
			got, err := e.Verify(context.Background(), targetsOf(t, cfg), ro)
			if err != nil {
				t.Fatal(err)
			}
			for i, h := range got.Hosts {
				node := "gpu00" + string(rune('1'+i))
				if len(h.Checks) != 1 || h.Checks[0].Status != verify.StatusFail || !strings.Contains(h.Checks[0].Message, "Slurm node "+node) || !strings.Contains(h.Checks[0].Message, "sbcast of no-such-gpuform failed") {
					t.Errorf("%s: %+v", h.Host, h.Checks)
				}
			}
		})

		t.Run("a node dies mid-step and the deadline cuts a slow one", func(t *testing.T) {
			// The binary sbcast sends kills itself on gpu002 and is slow on
			// gpu003; gpu001 verifies as ever.
			wrapper := filepath.Join(t.TempDir(), "gpuform-wrapper")
			script := "#!/bin/sh\ncase \"$SLURMD_NODENAME\" in\ngpu002) kill -KILL $$ ;;\ngpu003) sleep 60 ;;\nesac\nexec " + f.binary + " \"$@\"\n"
			if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			_, ro, _ := f.slurmEngine(t, dir, cfg, slurm.Options{})
			limit := &timeLimits{c: c}
			e := f.withBinaryOptions(dir, cfg, slurm.Options{Deadline: time.Now().Add(6 * time.Second), Binary: wrapper, Messages: limit})
			got, err := e.Verify(context.Background(), targetsOf(t, cfg), ro)
			if err != nil {
				t.Fatal(err)
			}
			// The deadline, sooner than the probe tier's 13 min: under 6s,
			// the 30s cleanup and a minute's margin, rounded up.
			if diff := cmp.Diff([]string{"00:02:00"}, limit.seen); diff != "" {
				t.Errorf("the allocation's TimeLimit with -deadline (-want +got):\n%s", diff)
			}
			gc := checks(got)
			if diff := cmp.Diff(checks(want)[hosts[0]], gc[hosts[0]]); diff != "" {
				t.Errorf("gpu001 (-want +got):\n%s", diff)
			}
			if c := gc[hosts[1]]; len(c) != 1 || c[0].Status != verify.StatusFail || !strings.Contains(c[0].Message, "gpu002") || !strings.Contains(c[0].Message, "Killed") {
				t.Errorf("the node that died: %+v", c)
			}
			if c := gc[hosts[2]]; len(c) != 1 || c[0].Status != verify.StatusNotRun || !c[0].Needed || !strings.Contains(c[0].Message, "-deadline") {
				t.Errorf("the node the deadline cut: %+v", c)
			}
			if got.OK() {
				t.Error("a run the deadline cut passed")
			}
		})

		t.Run("a drained node is named, the rest verified", func(t *testing.T) {
			c.DrainNode("gpu002", "RMA 4711")
			defer c.Scontrol("update", "NodeName=gpu002", "State=RESUME")
			e, ro, _ := f.slurmEngine(t, dir, cfg, slurm.Options{})
			got, err := e.Verify(context.Background(), targetsOf(t, cfg), ro)
			if err != nil {
				t.Fatal(err)
			}
			gc := checks(got)
			// Draining while the lane's previous job (the node that died)
			// is still being cleaned up on gpu002, drained once it is
			// gone: either way no allocation can get the node.
			if c := gc[hosts[1]]; len(c) != 1 || c[0].Status != verify.StatusFail || !(strings.Contains(c[0].Message, "the Slurm node gpu002 is drained (DRAINED): ") || strings.Contains(c[0].Message, "the Slurm node gpu002 is draining (DRAINING): ")) {
				t.Errorf("the drained node: %+v", c)
			}
			w := checks(want)
			delete(w, hosts[1])
			delete(gc, hosts[1])
			if diff := cmp.Diff(w, gc); diff != "" {
				t.Errorf("the other nodes (-want +got):\n%s", diff)
			}
		})

		t.Run("an allocation that does not start in time", func(t *testing.T) {
			out, err := c.Client("sbatch", "--parsable", "-N1", "-w", "gpu003", "-o", "/dev/null", "--wrap", "sleep 120")
			if err != nil {
				t.Fatal(err)
			}
			job := strings.TrimSpace(out)
			defer func() { _, _ = c.Client("scancel", job) }()
			waitRunning(t, c, job)
			e, ro, _ := f.slurmEngine(t, dir, cfg, slurm.Options{StartTimeout: 2 * time.Second})
			start := time.Now()
			_, err = e.Verify(context.Background(), targetsOf(t, cfg), ro)
			if err == nil || !strings.Contains(err.Error(), "did not start within 2s") || !strings.Contains(err.Error(), "gpu003") {
				t.Errorf("err = %v, want the allocation's start timeout", err)
			}
			if took := time.Since(start); took > 40*time.Second {
				t.Errorf("gave up after %s", took)
			}
			// Only this lane's allocation counts: the other lanes' salloc
			// jobs (named alike) are PENDING for an instant before they
			// start, so a job of theirs is told apart by the nodes it
			// asked for (%n), and ours is given a moment to leave the
			// queue after the engine's scancel.
			ours := func() string {
				q, _ := c.Client("squeue", "-h", "-n", "gpuform-verify", "-t", "PENDING", "-o", "%i %n")
				var left []string
				for _, l := range strings.Split(strings.TrimSpace(q), "\n") {
					if strings.Contains(l, "gpu[001-003]") || strings.Contains(l, "gpu001") || strings.Contains(l, "gpu003") {
						left = append(left, l)
					}
				}
				return strings.Join(left, "; ")
			}
			q := ours()
			for wait := time.Now().Add(5 * time.Second); q != "" && time.Now().Before(wait); q = ours() {
				time.Sleep(200 * time.Millisecond)
			}
			if q != "" {
				t.Errorf("the allocation that did not start is still queued: %s", q)
			}
		})
	})
	t.Run("fleet tier on gpu[004-007]", func(t *testing.T) {
		t.Parallel()
		t.Run("fleet tier: the multi-node test and its isolation as srun steps", func(t *testing.T) {
			fdir := filepath.Join(t.TempDir(), "fleet")
			if err := os.Mkdir(fdir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(fdir, "main.gpuform.hcl"), []byte(fleetSpec), 0o644); err != nil {
				t.Fatal(err)
			}
			fcfg, diags := spec.Load(fdir, spec.LoadOptions{BuiltinModules: modules.FS(), GPUModels: k.GPUModelTable()})
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			// The SSH reference runs beside the slurm engine's run, on
			// roots of its own (both mostly wait).
			sshState, state := t.TempDir(), t.TempDir()
			ssh := runner.Options{Tier: verify.TierFleet, KB: k, AllowLocal: true, Target: target.Options{Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
				return connect.Open(ctx, h, connect.Options{SimStateDir: sshState})
			}}}
			type result struct {
				doc *report.Document
				err error
			}
			ref := make(chan result, 1)
			ftargets := targetsOf(t, fcfg)
			go func() {
				doc, err := enginessh.Engine{}.Verify(context.Background(), ftargets, ssh)
				ref <- result{doc, err}
			}()
			var connects atomic.Int64
			ro := runner.Options{Tier: verify.TierFleet, KB: k, Target: target.Options{Connect: func(context.Context, spec.Host) (transport.Transport, error) {
				connects.Add(1)
				return nil, errors.New("the slurm engine must not connect to hosts")
			}}}
			limit := &timeLimits{c: c}
			e := slurm.New(slurm.Options{Binary: f.binary, Env: []string{c.Env(), "GPUFORM_SIM_STATE=" + state}, Messages: limit, Bundle: func(nodes map[string]slurm.BundleNode) (*slurm.Bundle, error) {
				return slurm.NewBundle(fcfg, fdir, nil, verify.TierFleet, false, nodes)
			}})
			got, err := e.Verify(context.Background(), targetsOf(t, fcfg), ro)
			if err != nil {
				t.Fatal(err)
			}
			// The fleet tier: two sbcasts of 5m, the 45m budget and the
			// step's minute, the group's run and isolation (the 45m
			// budget, the spec's nccl_test sets no timeout) and its
			// step's minute, the 30s cleanup, a minute's margin: 103m30s,
			// rounded up.
			if diff := cmp.Diff([]string{"01:44:00"}, limit.seen); diff != "" {
				t.Errorf("the allocation's TimeLimit (-want +got):\n%s", diff)
			}
			r := <-ref
			fwant := r.doc
			if r.err != nil {
				t.Fatal(r.err)
			}
			if len(fwant.Isolation) != 1 || len(fwant.Isolation[0].Culprits) != 1 || fwant.Isolation[0].Culprits[0].Host != "sim://hgx-h100-slownic/gpu006" {
				t.Fatalf("the SSH engine's isolation should name gpu006: %+v", fwant.Isolation)
			}
			if connects.Load() != 0 {
				t.Error("the slurm engine connected to hosts")
			}
			if diff := cmp.Diff(checks(fwant), checks(got)); diff != "" {
				t.Errorf("-engine slurm -tier fleet differs from -engine ssh (-ssh +slurm):\n%s", diff)
			}
			pairs := func(d *report.Document) []string {
				var out []string
				for _, iso := range d.Isolation {
					for _, p := range iso.Pairs {
						out = append(out, fmt.Sprintf("round %d %s+%s ran=%v pass=%v", p.Round, p.Hosts[0], p.Hosts[1], p.Ran, p.Pass))
					}
				}
				return out
			}
			if diff := cmp.Diff(pairs(fwant), pairs(got)); diff != "" {
				t.Errorf("isolation pairs (-ssh +slurm):\n%s", diff)
			}

			// The -deadline comes while the first isolation round runs: the
			// nodes' own checks and the group's run are done, its pairs
			// hang. The nodes' own checks are reported as -engine ssh has
			// them; what did not finish is not run, never passed.
			tmp := t.TempDir()
			mark := filepath.Join(tmp, "group-ran")
			wrapper := filepath.Join(tmp, "gpuform-wrapper")
			script := "#!/bin/sh\ncase \" $* \" in *\" -engine-command \"*) if [ -e " + mark + " ]; then sleep 60; fi; : >" + mark + " ;; esac\nexec " + f.binary + " \"$@\"\n"
			if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(15 * time.Second)
			e = slurm.New(slurm.Options{Binary: wrapper, Deadline: deadline, Env: []string{c.Env(), "GPUFORM_SIM_STATE=" + state}, Bundle: func(nodes map[string]slurm.BundleNode) (*slurm.Bundle, error) {
				return slurm.NewBundle(fcfg, fdir, nil, verify.TierFleet, false, nodes)
			}})
			cut, err := e.Verify(context.Background(), targetsOf(t, fcfg), ro)
			if err != nil {
				t.Fatal(err)
			}
			if over := time.Since(deadline); over > 20*time.Second {
				t.Errorf("the run ended %s after its deadline", over)
			}
			if cut.OK() || cut.Summary.HostsFailed != 4 || cut.Summary.NotRun != 4 {
				t.Errorf("a run the deadline cut: %+v", cut.Summary)
			}
			group, iso := verify.CheckNCCL.Named("fleet"), verify.CheckIsolation.Named("fleet")
			own := func(doc *report.Document) map[string][]verify.CheckResult {
				out := map[string][]verify.CheckResult{}
				for h, cs := range checks(doc) {
					for _, c := range cs {
						if c.ID != group && c.ID != iso {
							out[h] = append(out[h], c)
						}
					}
				}
				return out
			}
			if diff := cmp.Diff(own(fwant), own(cut)); diff != "" {
				t.Errorf("the nodes' own checks, the deadline cutting the isolation after them (-ssh +slurm):\n%s", diff)
			}
			for h, cs := range checks(cut) {
				for _, c := range cs {
					switch {
					case c.ID == group && c.Status != verify.StatusFail:
						t.Errorf("%s: the group's run finished below its floor, %s is %s: %s", h, c.ID, c.Status, c.Message)
					case c.ID == iso && (c.Status != verify.StatusNotRun || !c.Needed):
						t.Errorf("%s: the isolation the deadline cut, %s is %s (needed %v): %s", h, c.ID, c.Status, c.Needed, c.Message)
					}
				}
			}
			if len(cut.Isolation) != 1 || !strings.HasPrefix(cut.Isolation[0].Incomplete, "the run's -deadline ended it") || len(cut.Isolation[0].Culprits) != 0 {
				t.Errorf("the isolation the deadline cut: %+v", cut.Isolation)
			}
			for _, p := range pairs(cut) {
				if strings.Contains(p, "ran=true") {
					t.Errorf("a pair ran past the deadline: %s", p)
				}
			}
		})
	})
	t.Run("bench on gpu[008-010]", func(t *testing.T) {
		t.Parallel()
		t.Run("bench parity with ssh", func(t *testing.T) {
			bdir, bcfg := quickstartWith(t, "sim://hgx-h100-converged/gpu008", "sim://hgx-h100-degraded/gpu009", "sim://hgx-h100-stale/gpu010")
			state := t.TempDir()
			layers := []bench.Layer{bench.LayerHBM, bench.LayerGPUGPU, bench.LayerHostGPU}
			bwant := bench.Run(context.Background(), targetsOf(t, bcfg), bench.Options{KB: k, Layers: layers, Target: target.Options{Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
				return connect.Open(ctx, h, connect.Options{SimStateDir: state})
			}}})
			var connects atomic.Int64
			e := slurm.New(slurm.Options{Binary: f.binary, Env: []string{c.Env(), "GPUFORM_SIM_STATE=" + state}, Bundle: func(nodes map[string]slurm.BundleNode) (*slurm.Bundle, error) {
				return slurm.NewBundle(bcfg, bdir, nil, "", false, nodes)
			}})
			got, err := e.Bench(context.Background(), targetsOf(t, bcfg), bench.Options{KB: k, Layers: layers, Target: target.Options{Connect: func(context.Context, spec.Host) (transport.Transport, error) {
				connects.Add(1)
				return nil, errors.New("the slurm engine must not connect to hosts")
			}}})
			if err != nil {
				t.Fatal(err)
			}
			if connects.Load() != 0 {
				t.Error("the slurm engine connected to hosts")
			}
			measured := 0
			for _, h := range bwant.Hosts {
				if h.Error != "" {
					t.Fatalf("the SSH engine could not bench %s: %s", h.Host, h.Error)
				}
				for _, m := range h.Layers {
					if m.Verdict != bench.VerdictNotMeasured {
						measured++
					}
				}
			}
			if measured < 3 {
				t.Fatalf("the reference bench measured %d layer(s); the simulated nodes replay real captures for more", measured)
			}
			noTime := cmpopts.IgnoreFields(bench.Host{}, "DurationMS")
			if diff := cmp.Diff(bwant, got, noTime, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("bench -engine slurm differs from -engine ssh (-ssh +slurm):\n%s", diff)
			}
		})

		t.Run("bench: the group's multi-node run as an srun step", func(t *testing.T) {
			bdir := filepath.Join(t.TempDir(), "fleet")
			if err := os.Mkdir(bdir, 0o755); err != nil {
				t.Fatal(err)
			}
			// Two nodes without perftest: the network layer's NIC runs
			// (a second each) are left out, the group's run is not. They
			// are this lane's (the probe lane on gpu[001-003] drains and
			// kills gpu002 meanwhile).
			benchSpec := strings.Replace(fleetSpec, `hosts    = ["sim://hgx-h100-converged/gpu004", "sim://hgx-h100-converged/gpu005", "sim://hgx-h100-slownic/gpu006", "sim://hgx-h100-converged/gpu007"]`, `hosts    = ["sim://hgx-h100-notools/gpu008", "sim://hgx-h100-notools/gpu009"]`, 1)
			if err := os.WriteFile(filepath.Join(bdir, "main.gpuform.hcl"), []byte(benchSpec), 0o644); err != nil {
				t.Fatal(err)
			}
			bcfg, diags := spec.Load(bdir, spec.LoadOptions{BuiltinModules: modules.FS(), GPUModels: k.GPUModelTable()})
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			state := t.TempDir()
			layers := []bench.Layer{bench.LayerNetwork}
			sshTarget := target.Options{Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
				return connect.Open(ctx, h, connect.Options{SimStateDir: state})
			}}
			bwant := bench.Run(context.Background(), targetsOf(t, bcfg), bench.Options{KB: k, Layers: layers, AllowLocal: true, Target: sshTarget,
				LaunchNames: func(ctx context.Context, group []target.Host) map[string]string {
					return runner.LaunchNames(ctx, runner.Options{Target: sshTarget}, group)
				}})
			// The reference holds the group's measured point on every
			// host: bench gives the spec's command the group's hosts, as
			// verify's fleet tier does (the mpirun stand-in models only
			// runs given their hosts). Without the group's run through
			// Slurm the slurm engine's hosts have no such point at all.
			for _, h := range bwant.Hosts {
				found := false
				for _, m := range h.Layers {
					if m.Device == "all_reduce 2 nodes" && m.Verdict != bench.VerdictNotMeasured && m.MeasuredGBps != nil && *m.MeasuredGBps > 0 {
						found = true
					}
				}
				if !found {
					t.Fatalf("the SSH engine's bench of %s has no measured multi-node all_reduce: %+v", h.Host, h.Layers)
				}
			}
			var connects atomic.Int64
			limit := &timeLimits{c: c}
			e := slurm.New(slurm.Options{Binary: f.binary, Env: []string{c.Env(), "GPUFORM_SIM_STATE=" + state}, Messages: limit, Bundle: func(nodes map[string]slurm.BundleNode) (*slurm.Bundle, error) {
				return slurm.NewBundle(bcfg, bdir, nil, "", false, nodes)
			}})
			got, err := e.Bench(context.Background(), targetsOf(t, bcfg), bench.Options{KB: k, Layers: layers, Target: target.Options{Connect: func(context.Context, spec.Host) (transport.Transport, error) {
				connects.Add(1)
				return nil, errors.New("the slurm engine must not connect to hosts")
			}}})
			if err != nil {
				t.Fatal(err)
			}
			// bench: three sbcasts of 5m, bench's 20m default budget and
			// the step's minute, the group's all_reduce (no timeout: 10m)
			// and its step's minute, the node-to-node pairs (the NIC
			// listing's minute and its step's minute, the pairs' 15m),
			// the 30s cleanup, a minute's margin.
			if diff := cmp.Diff([]string{"01:06:00"}, limit.seen); diff != "" {
				t.Errorf("the allocation's TimeLimit (-want +got):\n%s", diff)
			}
			if connects.Load() != 0 {
				t.Error("the slurm engine connected to hosts")
			}
			noTime := cmpopts.IgnoreFields(bench.Host{}, "DurationMS")
			if diff := cmp.Diff(bwant, got, noTime, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("bench -engine slurm with the group's multi-node run differs from -engine ssh (-ssh +slurm):\n%s", diff)
			}
		})

		t.Run("bench: node-to-node NIC pairs as srun steps, one failing", func(t *testing.T) {
			testNodeToNodePairs(t, f, c)
		})
	})
}

// withBinary is e's configuration with another binary to sbcast.
func (f *fixture) withBinary(_ *slurm.Engine, dir string, cfg *spec.Config, bin string) *slurm.Engine {
	return f.withBinaryOptions(dir, cfg, slurm.Options{Binary: bin})
}

// withBinaryOptions is the fixture's engine with o, whose Binary wins.
func (f *fixture) withBinaryOptions(dir string, cfg *spec.Config, o slurm.Options) *slurm.Engine {
	o.Env = append(o.Env, f.cluster.Env(), "GPUFORM_SIM_STATE="+f.state)
	o.Bundle = func(nodes map[string]slurm.BundleNode) (*slurm.Bundle, error) {
		return slurm.NewBundle(cfg, dir, nil, verify.TierProbe, false, nodes)
	}
	return slurm.New(o)
}

// timeLimits is the engine's Messages: when the engine names the job it
// allocated, it reads that job's TimeLimit from slurmctld while the job
// is alive (the cluster forgets an ended job within MinJobAge).
type timeLimits struct {
	c    *slurmtest.Cluster
	seen []string
}

var allocatedJob = regexp.MustCompile(`Slurm: job ([0-9]+) holds `)

func (l *timeLimits) Write(p []byte) (int, error) {
	for _, m := range allocatedJob.FindAllStringSubmatch(string(p), -1) {
		limit, err := jobTimeLimit(l.c, m[1])
		if err != nil {
			limit = "error: " + err.Error()
		}
		l.seen = append(l.seen, limit)
	}
	return len(p), nil
}

// jobTimeLimit is job's TimeLimit as scontrol show job gives it.
func jobTimeLimit(c *slurmtest.Cluster, job string) (string, error) {
	out, err := c.Client("scontrol", "-o", "show", "job", job)
	if err != nil {
		return "", err
	}
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "TimeLimit="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("scontrol show job %s has no TimeLimit: %s", job, out)
}

func waitRunning(t *testing.T, c *slurmtest.Cluster, job string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out, _ := c.Client("squeue", "-h", "-j", job, "-o", "%T")
		if strings.TrimSpace(out) == "RUNNING" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("job %s did not start", job)
}

// nodeToNodeSpec is two simulated HGX H100 in one node block, gpu009's
// mlx5_5 trained at 200 Gb/s.
const nodeToNodeSpec = `module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

node "train" {
  hosts    = ["sim://hgx-h100-converged/gpu008", "sim://hgx-h100-slownic/gpu009"]
  hardware = module.hgx.hardware
}
`

// testNodeToNodePairs: bench -engine slurm runs the node-to-node NIC
// pairs -engine ssh runs between two hosts of a node block, as srun
// steps, and judges each host on them: one row per rail naming the
// partner, at the figures the simulated nodes replay; the rail whose
// client step is killed is not measured, saying why; no host is left
// marked as not paired. Every other row is -engine ssh's for the same
// nodes (over SSH the simulated nodes are not paired: their roots are on
// this machine).
func testNodeToNodePairs(t *testing.T, f *fixture, c *slurmtest.Cluster) {
	dir := filepath.Join(t.TempDir(), "pairs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.gpuform.hcl"), []byte(nodeToNodeSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, diags := spec.Load(dir, spec.LoadOptions{BuiltinModules: modules.FS(), GPUModels: f.kb.GPUModelTable()})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	layers := []bench.Layer{bench.LayerNetwork}
	sshState, state := t.TempDir(), t.TempDir()
	ref := make(chan *bench.Report, 1)
	go func() {
		ref <- bench.Run(context.Background(), targetsOf(t, cfg), bench.Options{KB: f.kb, Layers: layers, Target: target.Options{Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
			return connect.Open(ctx, h, connect.Options{SimStateDir: sshState})
		}}})
	}()
	// The client's end of the mlx5_3 rail dies on its node.
	wrapper := filepath.Join(t.TempDir(), "gpuform-wrapper")
	script := "#!/bin/sh\ncase \"$SLURMD_NODENAME $*\" in \"gpu009 \"*\" -engine-pair \"*gpu009:mlx5_3:*) kill -KILL $$ ;; esac\nexec " + f.binary + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var connects atomic.Int64
	e := slurm.New(slurm.Options{Binary: wrapper, Env: []string{c.Env(), "GPUFORM_SIM_STATE=" + state}, Bundle: func(nodes map[string]slurm.BundleNode) (*slurm.Bundle, error) {
		return slurm.NewBundle(cfg, dir, nil, "", false, nodes)
	}})
	got, err := e.Bench(context.Background(), targetsOf(t, cfg), bench.Options{KB: f.kb, Layers: layers, Target: target.Options{Connect: func(context.Context, spec.Host) (transport.Transport, error) {
		connects.Add(1)
		return nil, errors.New("the slurm engine must not connect to hosts")
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if connects.Load() != 0 {
		t.Error("the slurm engine connected to hosts")
	}
	want := <-ref

	// The simulated nodes replay ib_write_bw's real report: 392.34 Gb/s
	// average (provision/sim/bench/hgx-h100/ib_write_bw/report.txt), and
	// 196.17 Gb/s on hgx-h100-slownic's mlx5_5, which limits its pair.
	// Every active InfiniBand port of the HGX H100 meets its rail.
	rails := []string{"mlx5_0", "mlx5_1", "mlx5_10", "mlx5_11", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_9"}
	type row struct {
		Verdict bench.Verdict
		GBps    float64
	}
	names := map[string]string{"sim://hgx-h100-converged/gpu008": "sim://hgx-h100-slownic/gpu009", "sim://hgx-h100-slownic/gpu009": "sim://hgx-h100-converged/gpu008"}
	for _, h := range got.Hosts {
		peer, ok := names[h.Host]
		if !ok || h.Error != "" {
			t.Fatalf("host %s: %s", h.Host, h.Error)
		}
		wantRows := map[string]row{}
		for _, r := range rails {
			switch r {
			case "mlx5_5":
				wantRows[r+" <-> "+peer+" "+r] = row{bench.VerdictBelow, 196.17 / 8}
			case "mlx5_3":
				wantRows[r+" <-> "+peer+" "+r] = row{bench.VerdictNotMeasured, 0}
			default:
				wantRows[r+" <-> "+peer+" "+r] = row{bench.VerdictOK, 392.34 / 8}
			}
		}
		gotRows := map[string]row{}
		var others []bench.Measurement
		for _, m := range h.Layers {
			if m.Test != bench.TestNodeToNode {
				others = append(others, m)
				continue
			}
			r := row{Verdict: m.Verdict}
			if m.MeasuredGBps != nil {
				r.GBps = *m.MeasuredGBps
			}
			gotRows[m.Device] = r
			if strings.HasPrefix(m.Device, "mlx5_3 ") && (!strings.Contains(m.Note, "ib_write_bw node to node failed: gpu008 mlx5_3 → gpu009 mlx5_3: the Slurm node gpu009") || !strings.Contains(m.Note, "it sent no result")) {
				t.Errorf("%s: the rail whose client step died says %q", h.Host, m.Note)
			}
		}
		if diff := cmp.Diff(wantRows, gotRows, cmpopts.EquateApprox(0, 0.01)); diff != "" {
			t.Errorf("%s: node-to-node rows (-want +got):\n%s", h.Host, diff)
		}
		var ssh []bench.Measurement
		for _, w := range want.Hosts {
			if w.Host == h.Host {
				ssh = w.Layers
			}
		}
		if len(ssh) == 0 {
			t.Fatalf("the SSH engine's bench has no rows for %s", h.Host)
		}
		if diff := cmp.Diff(ssh, others, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: the rows besides the pairs differ from -engine ssh (-ssh +slurm):\n%s", h.Host, diff)
		}
	}
}
