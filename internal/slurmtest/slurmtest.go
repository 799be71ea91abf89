// Package slurmtest runs a real Slurm cluster of one node for tests:
// munged, slurmctld and slurmd from Debian's munge and slurm-wlm packages,
// with a throwaway configuration, state directory, munge socket and ports,
// so several test binaries can each run their own at the same time. The
// machine running the test is the only node; its Slurm node name is the
// test's choice (slurmd -N).
package slurmtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/sshtest"
)

// Options shape the cluster.
type Options struct {
	// NodeName is the Slurm node name of this machine (default "gpu001").
	NodeName string
	// Epilog, when set, is a shell script slurmd runs after each job; one
	// that sleeps keeps the node COMPLETING.
	Epilog string
	// Gres, when set, is the node's Gres= in slurm.conf
	// ("gpu:h100:8"); GresTypes then names its GRES.
	Gres string
	// GresConf, when set, is written as gres.conf beside slurm.conf, where
	// slurmd reads it. Its File= paths must exist: slurmd stats them.
	GresConf string
	// OtherNodes are more nodes in slurm.conf with no slurmd behind them
	// (each at its own unused port): slurmctld knows them, Start brings
	// them to IDLE+NOT_RESPONDING (DOWN, then RESUME) and SlurmdTimeout
	// to ten minutes, so for a test's length they stay in service and can
	// be drained and resumed like real nodes (SLURMD_NODENAME=one of them
	// runs health mode as that node). A
	// fleet for tests that count nodes, such as health mode's circuit
	// breaker; no job runs on them. An entry may be a Slurm hostlist
	// ("cpu[001-300]"): one slurm.conf line, at 127.0.0.2, so hundreds of
	// nodes cost slurmctld nothing to start.
	OtherNodes []string
	// ServedNodes are more nodes of this machine, each served by a slurmd
	// of its own (slurmd -N NAME, at its own Port, with its own spool
	// directory), so jobs and srun steps run on them as on separate
	// machines: a cluster of several real nodes on one host. Each gets
	// CPUs=1; jobs on them run as root like on the first node.
	ServedNodes []string
	// Partitions are more slurm.conf partition lines
	// ("PartitionName=gpu Nodes=gpu[001-005]"), beside the default
	// partition "test" of all nodes.
	Partitions []string

	// Prolog, when set, is a shell script slurmd runs before each job
	// (Prolog=), as root in slurmd's bare environment (no PATH):
	// SLURM_JOB_ID, SLURMD_NODENAME, SLURM_CONF and the others of
	// slurm.conf(5)'s "Prolog and Epilog Scripts". A non-zero exit drains
	// the node and requeues the job.
	Prolog string
	// PrologFlags is slurm.conf's PrologFlags= ("Alloc": run the prolog
	// when the job is allocated, not at its first step).
	PrologFlags string
	// PrologEpilogTimeout is slurm.conf's PrologEpilogTimeout= in seconds
	// (0: Slurm's default, wait indefinitely).
	PrologEpilogTimeout int
	// SchedulerParameters is slurm.conf's SchedulerParameters=
	// ("nohold_on_prolog_fail": a job whose prolog failed is requeued
	// pending, not held).
	SchedulerParameters string
}

// Cluster is a running one-node Slurm cluster.
type Cluster struct {
	// Dir holds the configuration, state, logs and munge socket.
	Dir string
	// Conf is the slurm.conf path: clients find it through SLURM_CONF.
	Conf string
	// Node is the Slurm node name of this machine.
	Node string
	// Served are the nodes a slurmd of this cluster serves: Node, then
	// Options.ServedNodes in order.
	Served []string
	t      testing.TB
}

// binaries are what the cluster needs; scripts/test.sh installs them
// (apt-get install slurm-wlm munge).
var binaries = []string{"/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/bin/scontrol", "/usr/bin/sbatch", "/usr/bin/squeue", "/usr/bin/scancel"}

// Start brings up munged, slurmctld and slurmd and stops them when the test
// ends. It skips the test (fails it in CI) when Slurm or munge is not
// installed, or when not run as root (slurmd must be root to run jobs).
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	for _, b := range binaries {
		if _, err := os.Stat(b); err != nil {
			sshtest.Missing(t, "slurmtest: "+b+" is not installed (apt-get install slurm-wlm munge; scripts/test.sh does)")
		}
	}
	if os.Geteuid() != 0 {
		sshtest.Missing(t, "slurmtest: a real slurmd must run as root")
	}
	if o.NodeName == "" {
		o.NodeName = "gpu001"
	}
	// The munge socket path must fit a sockaddr_un (108 bytes), which
	// t.TempDir's long names may not.
	dir, err := os.MkdirTemp("", "gfslurm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf"), Node: o.NodeName, Served: append([]string{o.NodeName}, o.ServedNodes...), t: t}
	for _, d := range []string{"state", "spool"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	key := make([]byte, 1024)
	f, err := os.Open("/dev/urandom")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Read(key)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "munge.key"), key, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "munge.sock")
	c.daemon("munged", "/usr/sbin/munged", "-F", "-f", "-S", sock,
		"--key-file="+filepath.Join(dir, "munge.key"), "--log-file="+filepath.Join(dir, "munged.log"),
		"--pid-file="+filepath.Join(dir, "munged.pid"), "--seed-file="+filepath.Join(dir, "munged.seed"))
	c.waitFor("munged's socket", func() bool { _, err := os.Stat(sock); return err == nil })

	host, _ := os.Hostname()
	host, _, _ = strings.Cut(host, ".")
	// extra are slurm.conf lines the options add before the node's.
	extra := ""
	if o.Epilog != "" {
		p := filepath.Join(dir, "epilog.sh")
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+o.Epilog+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		extra = "Epilog=" + p + "\n"
	}
	extra += prologLines(t, dir, o)
	extraParts := ""
	gres := ""
	if o.Gres != "" {
		name, _, _ := strings.Cut(o.Gres, ":")
		extra += "GresTypes=" + name + "\n"
		gres = " Gres=" + o.Gres
	}
	if o.GresConf != "" {
		if err := os.WriteFile(filepath.Join(dir, "gres.conf"), []byte(o.GresConf), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	others := ""
	for _, p := range o.Partitions {
		extraParts += p + "\n"
	}
	slurmdTimeout := 30
	if len(o.OtherNodes) > 0 {
		slurmdTimeout = 600
	}
	for _, n := range o.ServedNodes {
		others += fmt.Sprintf("NodeName=%s NodeHostname=%s NodeAddr=127.0.0.1 Port=%d CPUs=1 RealMemory=100 State=UNKNOWN\n", n, host, sshtest.FreePort(t))
	}
	for _, n := range o.OtherNodes {
		if strings.Contains(n, "[") {
			others += fmt.Sprintf("NodeName=%s NodeAddr=127.0.0.2 Port=%d CPUs=1 RealMemory=100 State=UNKNOWN\n", n, sshtest.FreePort(t))
			continue
		}
		others += fmt.Sprintf("NodeName=%s NodeHostname=%s NodeAddr=127.0.0.1 Port=%d CPUs=1 RealMemory=100 State=UNKNOWN\n", n, n, sshtest.FreePort(t))
	}
	conf := fmt.Sprintf(`ClusterName=gftest
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=%[2]d
SlurmdPort=%[3]d
AuthType=auth/munge
AuthInfo=socket=%[4]s
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=%[5]s/state
SlurmdSpoolDir=%[5]s/spool/%%n
SlurmctldPidFile=%[5]s/slurmctld.pid
SlurmdPidFile=%[5]s/slurmd-%%n.pid
SlurmctldLogFile=%[5]s/slurmctld.log
SlurmdLogFile=%[5]s/slurmd-%%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmdTimeout=%[11]d
MinJobAge=2
KillWait=1
RebootProgram=/bin/true
%[6]sNodeName=%[7]s NodeHostname=%[1]s NodeAddr=127.0.0.1 CPUs=%[8]d RealMemory=100%[9]s State=UNKNOWN
%[10]sPartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
%[12]s`, host, sshtest.FreePort(t), sshtest.FreePort(t), sock, dir, extra, o.NodeName, runtime.NumCPU(), gres, others, slurmdTimeout, extraParts)
	if err := os.WriteFile(c.Conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	c.daemon("slurmctld", "/usr/sbin/slurmctld", "-D", "-i", "-f", c.Conf)
	c.waitFor("slurmctld to answer", func() bool { _, err := c.run("scontrol", "ping"); return err == nil })
	slurmds := make([]<-chan struct{}, len(c.Served))
	for i, n := range c.Served {
		if err := os.MkdirAll(filepath.Join(dir, "spool", n), 0o755); err != nil {
			t.Fatal(err)
		}
		slurmds[i] = c.daemon(slurmdName(i, n), "/usr/sbin/slurmd", "-D", "-N", n, "-f", c.Conf)
	}
	for i, n := range c.Served {
		c.waitFor(n+" to register as IDLE", func() bool {
			select {
			case <-slurmds[i]:
				// A slurmd that exits (a port taken, a bad line in
				// slurm.conf) never registers: say why at once.
				log, _ := os.ReadFile(filepath.Join(c.Dir, slurmdName(i, n)+".out"))
				c.t.Fatalf("slurmtest: %s's slurmd exited before it registered:\n%s", n, lastLines(string(log), 20))
			default:
			}
			s, _ := c.NodeState(n)
			return s == "IDLE"
		})
	}
	// Nodes no slurmd serves start UNKNOWN, which Slurm will not drain
	// and resume like a node in service.
	for _, n := range o.OtherNodes {
		c.Scontrol("update", "NodeName="+n, "State=DOWN", "Reason=slurmtest: no slurmd")
		c.Scontrol("update", "NodeName="+n, "State=RESUME")
	}
	// Jobs a test left running end with it, before slurmd does, so no
	// sleep outlives the test.
	c.t.Cleanup(func() {
		_, _ = c.run("scancel", "--full", "-w", c.Node)
		c.waitFor("the test's jobs to end", func() bool {
			s, _ := c.run("squeue", "-h", "-w", c.Node, "-t", "running,completing", "-o", "%i")
			return strings.TrimSpace(s) == ""
		})
	})
	return c
}

// prologLines writes the prolog script and returns the slurm.conf lines
// of Options' Prolog, PrologFlags, PrologEpilogTimeout and
// SchedulerParameters.
func prologLines(t testing.TB, dir string, o Options) string {
	t.Helper()
	lines := ""
	if o.Prolog != "" {
		p := filepath.Join(dir, "prolog.sh")
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+o.Prolog+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		lines += "Prolog=" + p + "\n"
	}
	if o.PrologFlags != "" {
		lines += "PrologFlags=" + o.PrologFlags + "\n"
	}
	if o.PrologEpilogTimeout > 0 {
		lines += "PrologEpilogTimeout=" + strconv.Itoa(o.PrologEpilogTimeout) + "\n"
	}
	if o.SchedulerParameters != "" {
		lines += "SchedulerParameters=" + o.SchedulerParameters + "\n"
	}
	return lines
}

// slurmdName names the i-th served node's slurmd, its log and output.
func slurmdName(i int, node string) string {
	if i == 0 {
		return "slurmd"
	}
	return "slurmd-" + node
}

// daemon starts a foreground daemon and stops it (and waits for it) when
// the test ends. The channel is closed when the daemon has exited.
func (c *Cluster) daemon(name, path string, args ...string) <-chan struct{} {
	c.t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+c.Conf)
	out, err := os.Create(filepath.Join(c.Dir, name+".out"))
	if err != nil {
		c.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		c.t.Fatalf("slurmtest: start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); out.Close(); close(done) }() // a daemon that exits is seen by the waits on its ports and log
	c.t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if c.t.Failed() {
			log, _ := os.ReadFile(filepath.Join(c.Dir, name+".out"))
			c.t.Logf("%s output:\n%s", name, lastLines(string(log), 20))
		}
	})
	return done
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (c *Cluster) waitFor(what string, ok func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			for _, n := range []string{"munged", "slurmctld", "slurmd"} {
				log, _ := os.ReadFile(filepath.Join(c.Dir, n+".out"))
				c.t.Logf("%s output:\n%s", n, lastLines(string(log), 20))
			}
			c.t.Fatalf("slurmtest: timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Env is the environment entry clients need: SLURM_CONF=….
func (c *Cluster) Env() string { return "SLURM_CONF=" + c.Conf }

// run runs a Slurm client with the cluster's configuration.
func (c *Cluster) run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/"+name, args...)
	cmd.Env = append(os.Environ(), c.Env())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// Scontrol runs scontrol with args and fails the test when it fails.
func (c *Cluster) Scontrol(args ...string) string {
	c.t.Helper()
	out, err := c.run("scontrol", args...)
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

// State returns the node's State= and Reason= (Reason without the
// "[user@time]" Slurm appends).
func (c *Cluster) State() (state, reason string) {
	out, err := c.run("scontrol", "-o", "show", "node", c.Node)
	if err != nil {
		return "", ""
	}
	return parseState(out)
}

// parseState reads State= and Reason= from scontrol -o show node; a
// Comment= after the reason is not part of it.
func parseState(out string) (state, reason string) {
	if i := strings.Index(out, "] Comment="); i >= 0 {
		out = out[:i+1]
	}
	if i := strings.Index(out, " Reason="); i >= 0 {
		reason = strings.TrimSpace(out[i+len(" Reason="):])
		if j := strings.LastIndex(reason, " ["); j >= 0 {
			reason = reason[:j]
		}
		out = out[:i]
	}
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "State="); ok {
			state = v
		}
	}
	return state, reason
}

// WaitState waits until the node's state satisfies ok and returns it.
func (c *Cluster) WaitState(what string, ok func(state string) bool) string {
	c.t.Helper()
	var s string
	c.waitFor(what, func() bool { s, _ = c.State(); return ok(s) })
	return s
}

// Sbatch submits a job running script on the node and returns its id once
// it is running.
func (c *Cluster) Sbatch(script string) string {
	c.t.Helper()
	out, err := c.run("sbatch", "--parsable", "-w", c.Node, "-o", "/dev/null", "--wrap", script)
	if err != nil {
		c.t.Fatal(err)
	}
	id := strings.TrimSpace(out)
	if _, err := strconv.Atoi(id); err != nil {
		c.t.Fatalf("sbatch printed %q, not a job id", out)
	}
	c.waitFor("job "+id+" to run", func() bool {
		s, _ := c.run("squeue", "-h", "-j", id, "-o", "%T")
		return strings.TrimSpace(s) == "RUNNING"
	})
	return id
}

// Drain drains the node as an admin would.
func (c *Cluster) Drain(reason string) {
	c.t.Helper()
	c.Scontrol("update", "NodeName="+c.Node, "State=DRAIN", "Reason="+reason)
}

// DrainNode drains another node of the cluster (Options.OtherNodes) with
// reason, as an admin or an earlier gpuform run would have.
func (c *Cluster) DrainNode(node, reason string) {
	c.t.Helper()
	c.Scontrol("update", "NodeName="+node, "State=DRAIN", "Reason="+reason)
}

// NodeState returns another node's State= and Reason= (Reason without
// the "[user@time]" Slurm appends), as State does for this machine's.
func (c *Cluster) NodeState(node string) (state, reason string) {
	out, err := c.run("scontrol", "-o", "show", "node", node)
	if err != nil {
		return "", ""
	}
	return parseState(out)
}

// Comment returns a node's Comment= ("" when none).
func (c *Cluster) Comment(node string) string {
	out, err := c.run("scontrol", "-o", "show", "node", node)
	if err != nil {
		return ""
	}
	_, comment, ok := strings.Cut(strings.TrimSpace(out), " Comment=")
	if !ok || comment == "(null)" {
		return ""
	}
	return comment
}

// DownNode sets another node DOWN with reason, as an admin would.
func (c *Cluster) DownNode(node, reason string) {
	c.t.Helper()
	c.Scontrol("update", "NodeName="+node, "State=DOWN", "Reason="+reason)
}

// Down sets the node DOWN as an admin would.
func (c *Cluster) Down(reason string) {
	c.t.Helper()
	c.Scontrol("update", "NodeName="+c.Node, "State=DOWN", "Reason="+reason)
}

// Wrap writes scontrol and squeue into dir (a simulated node's stand-in
// directory, first on its PATH) as wrappers that run the real clients
// against this cluster, so a simulated node is drained in the real
// slurmctld. Each call is logged to the simulated node's calls.log like a
// stand-in's.
func (c *Cluster) Wrap(dir string) {
	c.t.Helper()
	for _, name := range []string{"scontrol", "squeue"} {
		script := fmt.Sprintf(`#!/bin/sh
if [ -n "${GPUFORM_ROOT:-}" ] && [ "${GPUFORM_SIM_NESTED:-}" != 1 ]; then
	mkdir -p "$GPUFORM_ROOT/var/log/gpuform-sim"
	printf '%%s\n' "%[1]s $*" >>"$GPUFORM_ROOT/var/log/gpuform-sim/calls.log"
fi
SLURM_CONF=%[2]s exec /usr/bin/%[1]s "$@"
`, name, c.Conf)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			c.t.Fatal(err)
		}
	}
}

// Client runs a Slurm client (/usr/bin/NAME: srun, sbcast, salloc, …)
// with the cluster's configuration and returns its combined output.
func (c *Cluster) Client(name string, args ...string) (string, error) {
	return c.run(name, args...)
}

// Submit submits a batch job running script on the node and returns its
// id at once, without waiting for it to run (a job whose prolog fails
// never does).
func (c *Cluster) Submit(script string) string {
	c.t.Helper()
	out, err := c.run("sbatch", "--parsable", "-w", c.Node, "-o", "/dev/null", "--wrap", script)
	if err != nil {
		c.t.Fatal(err)
	}
	id := strings.TrimSpace(out)
	if _, err := strconv.Atoi(id); err != nil {
		c.t.Fatalf("sbatch printed %q, not a job id", out)
	}
	return id
}

// Job returns the fields of scontrol -o show job ID (JobState, Restarts,
// Reason, StartTime, …); a value with spaces in it keeps only its first
// word. Nil when slurmctld no longer knows the job.
func (c *Cluster) Job(id string) map[string]string {
	out, err := c.run("scontrol", "-o", "show", "job", id)
	if err != nil {
		return nil
	}
	job := map[string]string{}
	for _, f := range strings.Fields(out) {
		if k, v, ok := strings.Cut(f, "="); ok {
			if _, dup := job[k]; !dup {
				job[k] = v
			}
		}
	}
	return job
}

// WaitJob waits until job id's fields satisfy ok and returns them.
func (c *Cluster) WaitJob(id, what string, ok func(job map[string]string) bool) map[string]string {
	c.t.Helper()
	var job map[string]string
	c.waitFor("job "+id+" "+what, func() bool { job = c.Job(id); return job != nil && ok(job) })
	return job
}
