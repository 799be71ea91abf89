package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/slurmtest"
	"github.com/gpuform/gpuform/provision/sim"
)

// gateCluster is one real Slurm node whose Prolog= and Epilog= run this
// test binary as gpuform verify --local -slurm-prolog / -slurm-epilog,
// the way slurmd runs them: as root, in slurmd's bare environment, with
// the job's SLURM_JOB_ID and SLURMD_NODENAME. The node's kernel log is a
// simulated root's (its dmesg stand-in first on the script's PATH) and
// NVML the dgxh100 mock. A gate runs only while dir/prolog.on or
// dir/epilog.on exists, holding the root it reads; each run leaves its
// output, exit status and wall time in dir/<gate>-<job>.out, .rc and .ms.
type gateCluster struct {
	*slurmtest.Cluster
	dir, spec string
}

func startGateCluster(t *testing.T, node string) *gateCluster {
	t.Helper()
	dir, err := os.MkdirTemp("", "gfgate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, gate := range []string{"prolog", "epilog"} {
		d := filepath.Join(bin, gate)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(d, "dmesg"), "#!/bin/sh\nroot=$(cat '"+dir+"/"+gate+".on')\nGPUFORM_ROOT=$root exec \"$root/"+sim.BinDir+"/dmesg\" \"$@\"\n")
		if err := os.Chmod(filepath.Join(d, "dmesg"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	spec := filepath.Join(dir, "spec")
	if err := os.Mkdir(spec, 0o755); err != nil {
		t.Fatal(err)
	}
	// A fleet of one: the breaker must allow its one drain.
	writeFile(t, filepath.Join(spec, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\""+node+"\"]\n  health {\n    max_drained_share = 1\n  }\n}\n")
	script := func(gate string) string {
		// The timing lines are the gate's wall time as slurmd sees it.
		return `[ -e '` + dir + `/` + gate + `.on' ] || exit 0
out='` + dir + `/` + gate + `-'"$SLURM_JOB_ID"
t0=$(date +%s%N)
PATH='` + bin + `/` + gate + `:/usr/bin:/bin' GPUFORM_HEALTH_STATE='` + dir + `/health.json' '` + os.Args[0] + `' gpuform-cli verify --local -slurm-` + gate + ` -mock-nvml dgxh100 '` + spec + `' >"$out.out" 2>&1
rc=$?
echo $(( ($(date +%s%N) - t0) / 1000000 )) >"$out.ms"
echo $rc >"$out.rc"
exit $rc`
	}
	c := slurmtest.Start(t, slurmtest.Options{NodeName: node, Prolog: script("prolog"), PrologFlags: "Alloc",
		Epilog: script("epilog"), SchedulerParameters: "nohold_on_prolog_fail"})
	return &gateCluster{Cluster: c, dir: dir, spec: spec}
}

// use gives each gate the simulated root whose kernel log it reads; ""
// turns the gate off.
func (g *gateCluster) use(t *testing.T, prologRoot, epilogRoot string) {
	t.Helper()
	for gate, root := range map[string]string{"prolog": prologRoot, "epilog": epilogRoot} {
		p := filepath.Join(g.dir, gate+".on")
		if root != "" {
			writeFile(t, p, root)
		} else if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

// result waits for a gate's run for job id and returns its exit status,
// output and wall time in milliseconds.
func (g *gateCluster) result(t *testing.T, gate, id string) (int, string, int) {
	t.Helper()
	base := filepath.Join(g.dir, gate+"-"+id)
	deadline := time.Now().Add(60 * time.Second)
	for {
		rc, err := os.ReadFile(base + ".rc")
		if err == nil && strings.HasSuffix(string(rc), "\n") {
			code, _ := strconv.Atoi(strings.TrimSpace(string(rc)))
			out, _ := os.ReadFile(base + ".out")
			ms, _ := os.ReadFile(base + ".ms")
			n, _ := strconv.Atoi(strings.TrimSpace(string(ms)))
			return code, string(out), n
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %s of job %s did not finish", gate, id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// The gate against a real slurmctld and slurmd (issue 33). One job on a
// good node: its prolog passes silently and the job runs to completion;
// then the Xid 79 it left in the kernel log drains the node through the
// epilog, with the reason naming the check, the job and the job's GPU,
// not the Xid 79 of another GPU logged days before the job. A node whose
// kernel log holds an Xid 79 fails the prolog: drained with the check as
// the reason, exit 2, and Slurm requeues the job (pending, not held, with
// nohold_on_prolog_fail).
func TestSlurmPrologEpilogGate(t *testing.T) {
	t.Parallel()
	roots := t.TempDir()
	good, err := sim.Materialize("hgx-h100-converged", filepath.Join(roots, "good"))
	if err != nil {
		t.Fatal(err)
	}
	bad, err := sim.Materialize("hgx-h100-xid79", filepath.Join(roots, "bad"))
	if err != nil {
		t.Fatal(err)
	}
	g := startGateCluster(t, "gpu021")

	t.Run("good node runs the job, the Xid it left drains the node", func(t *testing.T) {
		// The epilog reads the Xid 79 node's log, whose Xid 79 on
		// 0000:9d:00 is from 2026-11-30; the job logs one on 0000:18:00 as
		// the driver would, stamped now.
		g.use(t, good, bad)
		kmsg := filepath.Join(bad, "var/lib/gpuform-sim/kmsg")
		id := g.Submit(`printf '%s NVRM: Xid (PCI:0000:18:00): 79, pid=4711, name=python, GPU has fallen off the bus.\n' "$(date -u +%Y-%m-%dT%H:%M:%S,000000+00:00)" >>'` + kmsg + `'`)
		code, out, ms := g.result(t, "prolog", id)
		if code != 0 || out != "" {
			t.Fatalf("prolog of job %s: exit %d, output %q; want 0 and nothing", id, code, out)
		}
		t.Logf("prolog wall time on a good node, as slurmd ran it: %d ms", ms)
		code, out, _ = g.result(t, "epilog", id)
		st, reason := g.State()
		want := "gpuform: health: epilog job " + id + ": kernel.xid: reboot: Xid 79 at 00000000:18:00.0 — "
		if code != ExitReport || !strings.Contains(st, "DRAIN") || !strings.HasPrefix(reason, want) {
			t.Fatalf("epilog of job %s: exit %d, state %q reason %q; want %d, DRAIN, %q…\n%s", id, code, st, reason, ExitReport, want, out)
		}
		if !strings.Contains(out, "Slurm: drained node "+g.Node) || strings.Contains(out, "0000:9d:00") {
			t.Errorf("epilog output lacks the drain, or judged the Xid from before the job:\n%s", out)
		}
		job := g.WaitJob(id, "to complete", func(j map[string]string) bool { return j["JobState"] == "COMPLETED" || j["JobState"] == "FAILED" })
		if job["JobState"] != "COMPLETED" || job["Restarts"] != "0" {
			t.Errorf("job %s: JobState=%s Restarts=%s; want COMPLETED, 0", id, job["JobState"], job["Restarts"])
		}
		g.Scontrol("update", "NodeName="+g.Node, "State=RESUME")
	})

	t.Run("bad node: the prolog drains it and Slurm requeues the job", func(t *testing.T) {
		g.use(t, bad, "")
		id := g.Submit("sleep 30")
		code, out, _ := g.result(t, "prolog", id)
		job := g.WaitJob(id, "to be requeued", func(j map[string]string) bool { return j["Restarts"] != "0" && j["JobState"] == "PENDING" })
		st, reason := g.State()
		want := "gpuform: health: prolog job " + id + ": kernel.xid: reboot: Xid 79 at 00000000:9D:00.0"
		if code != ExitReport || !strings.Contains(st, "DRAIN") || !strings.HasPrefix(reason, want) {
			t.Fatalf("prolog of job %s: exit %d, state %q reason %q; want %d, DRAIN, %q…\n%s", id, code, st, reason, ExitReport, want, out)
		}
		if job["Restarts"] != "1" || job["Reason"] == "launch" {
			t.Errorf("job %s after the failed prolog: JobState=%s Restarts=%s Reason=%s; want PENDING, 1, not held", id, job["JobState"], job["Restarts"], job["Reason"])
		}
		// A passing HealthCheckProgram run (this machine's own kernel
		// log, no Xid) does not lift the gate's drain: it did not judge
		// what the prolog did.
		code, out, errOut := runHealth(t, healthCmd(g.Cluster, g.spec, g.Node, filepath.Join(g.dir, "health.json"), "-mock-nvml", "dgxh100"))
		if st2, reason2 := g.State(); code != ExitOK || !strings.Contains(st2, "DRAIN") || reason2 != reason || !strings.Contains(out, "a prolog or epilog gate's drain, which a health check does not lift") {
			t.Errorf("health check after the prolog's drain: exit %d, state %q reason %q\n%s%s", code, st2, reason2, out, errOut)
		}
	})

	t.Run("breaker open: the job starts on a failing node", func(t *testing.T) {
		// A spec of this node alone at the default max_drained_share
		// (0.1 of one node: none may drain, which validate warns of):
		// the gate run as slurmd would for job 7, on a kernel log that
		// holds an Xid 79, does not drain and lets the job start.
		g.Scontrol("update", "NodeName="+g.Node, "State=RESUME")
		spec := healthSpec(t, `"`+g.Node+`"`, "")
		cmd := exec.Command(os.Args[0], "gpuform-cli", "verify", "--local", "-slurm-prolog", "-mock-nvml", "dgxh100", spec)
		cmd.Env = []string{g.Env(), "SLURMD_NODENAME=" + g.Node, "SLURM_JOB_ID=7", "SLURM_SCRIPT_CONTEXT=prolog_slurmd",
			"GPUFORM_HEALTH_STATE=" + filepath.Join(g.dir, "health.json"), "PATH=" + filepath.Join(g.dir, "bin", "prolog") + ":/usr/bin:/bin"}
		cmd.Dir = "/"
		code, out, errOut := runHealth(t, cmd)
		st, reason := g.State()
		if code != ExitOK || strings.Contains(st, "DRAIN") || !strings.Contains(errOut, "CIRCUIT BREAKER OPEN: not draining node "+g.Node) ||
			!strings.Contains(errOut, "-slurm-prolog: job 7 starts on node "+g.Node+" although it failed: kernel.xid: reboot: ") {
			t.Fatalf("prolog past the breaker: exit %d, state %q reason %q; want 0, in service, the breaker said on stderr\n%s%s", code, st, reason, out, errOut)
		}
		if !strings.Contains(errOut, "health mode already holds 0 of the fleet's 1 GPU nodes drained (none); health { max_drained_share = 0.1 } allows 0") {
			t.Errorf("stderr does not say why the breaker held:\n%s", errOut)
		}
		if cm := g.Comment(g.Node); !strings.HasPrefix(cm, "gpuform: health: circuit breaker open: not drained (prolog job 7: kernel.xid: ") {
			t.Errorf("node comment %q", cm)
		}
	})

	t.Run("epilog: a job whose start cannot be read has the whole log judged", func(t *testing.T) {
		// Fail closed: slurmctld knows no job 999999, so the epilog judges
		// the Xid 79 logged days ago rather than nothing.
		cmd := exec.Command(os.Args[0], "gpuform-cli", "verify", "--local", "-slurm-epilog", "-mock-nvml", "dgxh100", g.spec)
		cmd.Env = []string{g.Env(), "SLURMD_NODENAME=" + g.Node, "SLURM_JOB_ID=999999", "SLURM_SCRIPT_CONTEXT=epilog_slurmd",
			"GPUFORM_HEALTH_STATE=" + filepath.Join(g.dir, "health.json"), "PATH=" + filepath.Join(g.dir, "bin", "prolog") + ":/usr/bin:/bin"}
		cmd.Dir = "/"
		code, out, errOut := runHealth(t, cmd)
		st, reason := g.State()
		if code != ExitReport || !strings.Contains(st, "DRAIN") || !strings.HasPrefix(reason, "gpuform: health: epilog job 999999: kernel.xid: reboot: Xid 79 at 00000000:9D:00.0") ||
			!strings.Contains(errOut, "read Slurm job 999999") || !strings.Contains(errOut, "judging the kernel log since boot instead of since the job started") {
			t.Fatalf("epilog without the job's start: exit %d, state %q reason %q\n%s%s", code, st, reason, out, errOut)
		}
	})
}

// BenchmarkSlurmPrologGoodNode is what the prolog gate adds to a job's
// start on a node that passes (issue 33: under 2 s): one whole run of
// verify --local -slurm-prolog, the quick tier on the dgxh100 NVML mock
// and this machine's kernel log, as slurmd would start it, in process.
// A passing node makes no Slurm call, so no cluster is needed. DCGM is
// not installed here (dcgm.diag is optional for a spec without a dcgm
// block); on a node with DCGM, its level 1 diagnostic adds its own time.
func BenchmarkSlurmPrologGoodNode(b *testing.B) {
	spec := b.TempDir()
	if err := os.WriteFile(filepath.Join(spec, "main.gpuform.hcl"), []byte("node \"n\" {\n  hosts = [\"gpu001\"]\n}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	env := []string{"SLURMD_NODENAME=gpu001", "SLURM_JOB_ID=42", "SLURM_SCRIPT_CONTEXT=prolog_slurmd",
		"GPUFORM_HEALTH_STATE=" + filepath.Join(b.TempDir(), "health.json"), "PATH=/usr/bin:/bin:/usr/sbin:/sbin"}
	for b.Loop() {
		var out, errOut strings.Builder
		code := Run(b.Context(), []string{"verify", "--local", "-slurm-prolog", "-mock-nvml", "dgxh100", spec}, Streams{Out: &out, Err: &errOut, Environ: env})
		if code != ExitOK || out.Len() != 0 || errOut.Len() != 0 {
			b.Fatalf("a good node's prolog: exit %d, output %q %q; want 0 and nothing", code, out.String(), errOut.String())
		}
	}
}

// A gate refuses to run where slurmd did not start it, or in the wrong
// slot, naming what is missing, before any check runs; exit 1, which in a
// real prolog has Slurm drain the node itself (fail closed). A
// PrologEpilogTimeout too short for the checks and gpuform's Slurm calls
// is refused with the value to give instead.
func TestSlurmGateRefusals(t *testing.T) {
	t.Parallel()
	spec := t.TempDir()
	writeFile(t, filepath.Join(spec, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"gpu001\"]\n}\n")
	short := filepath.Join(t.TempDir(), "slurm.conf")
	writeFile(t, short, "ClusterName=c\nPrologEpilogTimeout=20 # seconds\n")
	base := []string{"SLURMD_NODENAME=gpu001", "SLURM_JOB_ID=42"}
	for _, tc := range []struct {
		name string
		env  []string
		gate string
		want string
	}{
		{"no node name", []string{"SLURM_JOB_ID=42"}, "prolog", "Error: -slurm-prolog: SLURMD_NODENAME is not set, so this is not slurmd's Prolog script and the node to drain is unknown (slurmd sets SLURMD_NODENAME and SLURM_JOB_ID for its Prolog= script; to try the gate by hand, set both)\n"},
		{"no job", []string{"SLURMD_NODENAME=gpu001"}, "epilog", "Error: -slurm-epilog: SLURM_JOB_ID is not set, so this is not slurmd's Epilog script (slurmd sets SLURMD_NODENAME and SLURM_JOB_ID for its Epilog= script; to try the gate by hand, set both)\n"},
		{"not a job id", []string{"SLURMD_NODENAME=gpu001", "SLURM_JOB_ID=42;reboot"}, "prolog", "Error: -slurm-prolog: SLURM_JOB_ID=\"42;reboot\" is not a Slurm job id\n"},
		{"wrong slot", append(base, "SLURM_SCRIPT_CONTEXT=epilog_slurmd"), "prolog", "Error: -slurm-prolog: slurmd runs this as epilog_slurmd (SLURM_SCRIPT_CONTEXT), not as its Prolog script: -slurm-prolog belongs in Prolog=, -slurm-epilog in Epilog=\n"},
		{"timeout too short", append(base, "SLURM_CONF="+short), "prolog", "Error: -slurm-prolog: PrologEpilogTimeout=20 in slurm.conf leaves the checks 0s after gpuform's 25s for Slurm calls; give it at least 205 (the quick tier needs up to 3m0s)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut strings.Builder
			code := Run(t.Context(), []string{"verify", "--local", "-slurm-" + tc.gate, "-mock-nvml", "dgxh100", spec}, Streams{Out: &out, Err: &errOut, Environ: tc.env})
			if code != ExitFailed || out.String() != "" || errOut.String() != tc.want {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1 and:\n%s", code, out.String(), errOut.String(), tc.want)
			}
		})
	}
}

// PrologEpilogTimeout is read from slurm.conf's text as slurmd reads it:
// keys in any case, comments cut, the last setting winning; a value that
// is no number of seconds is an error naming the line.
func TestParsePrologEpilogTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		conf    string
		want    int
		wantErr string
	}{
		{"ClusterName=c\nSlurmdTimeout=300\n", 0, ""},
		{"prologepilogtimeout=240\n", 240, ""},
		{"PrologEpilogTimeout=60\nPrologEpilogTimeout=300 # raised for DCGM\n", 300, ""},
		{"#PrologEpilogTimeout=60\n", 0, ""},
		{"MessageTimeout=10 PrologEpilogTimeout=90\n", 90, ""},
		{"ClusterName=c\nPrologEpilogTimeout=5m\n", 0, "slurm.conf line 2: PrologEpilogTimeout=5m is not a number of seconds"},
	} {
		got, err := parsePrologEpilogTimeout([]byte(tc.conf))
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%q: %v, want error %q", tc.conf, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %d, %v; want %d", tc.conf, got, err, tc.want)
		}
	}
}

// A failing node whose Slurm cannot be reached (scontrol fails: here, a
// slurm.conf with no SlurmctldHost) exits 1 naming the node and what
// scontrol said: in a real prolog slurmd then drains the node itself and
// requeues the job, so the gate fails closed. The Xid 79 is planted in
// the NVML mock (-mock-fault), seen within the gate's 100 ms listen.
func TestSlurmGateScontrolFails(t *testing.T) {
	t.Parallel()
	spec := t.TempDir()
	writeFile(t, filepath.Join(spec, "main.gpuform.hcl"), "node \"n\" {\n  hosts = [\"gpu001\"]\n  health {\n    max_drained_share = 1\n  }\n}\n")
	conf := filepath.Join(t.TempDir(), "slurm.conf")
	writeFile(t, conf, "ClusterName=broken\n")
	env := []string{"SLURMD_NODENAME=gpu001", "SLURM_JOB_ID=42", "SLURM_CONF=" + conf,
		"GPUFORM_HEALTH_STATE=" + filepath.Join(t.TempDir(), "health.json")}
	var out, errOut strings.Builder
	code := Run(t.Context(), []string{"verify", "--local", "-slurm-prolog", "-mock-nvml", "dgxh100", "-mock-fault", "xid:4:79", spec}, Streams{Out: &out, Err: &errOut, Environ: env})
	if code != ExitFailed || !strings.Contains(errOut.String(), `Error: -slurm-prolog: read Slurm node "gpu001" on local://`) || !strings.HasSuffix(errOut.String(), ": exit status 1:   | scontrol: fatal: Unable to process configuration file\n") || !strings.Contains(out.String(), "nvml.xid") {
		t.Errorf("exit %d; want 1, the report and the scontrol error\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
}
