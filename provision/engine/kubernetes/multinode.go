package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gpuform/gpuform/internal/cmdline"
	engineslurm "github.com/gpuform/gpuform/provision/engine/slurm"
	"github.com/gpuform/gpuform/provision/kube"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/runner"
)

// A launch is how the fleet tier's multi-node tests and isolation pairs
// run on Kubernetes, the way an MPIJob runs: the runner asks for a
// command to be run from a group's first host (runner.Options.Launch),
// as the SSH engine runs it over its connection and the slurm engine as
// an srun step; here it is a pair of roles of Jobs, all pinned
// (nodeName) like the per-node Jobs:
//
//   - a worker Job on each other node the command's host list names (the
//     whole group where it names none the engine knows) holds the node's
//     GPUs (nvidia.com/gpu, as the per-node Job does) for the test and
//     does nothing else (verify --local -engine-hold D, which sleeps
//     until D or its SIGTERM): so that the kubelet admits no workload on
//     those GPUs while the test's ranks run there. It is unprivileged,
//     runs as nobody, with no service account token;
//   - once every worker's pod runs, a launcher Job on the command's own
//     node runs it there (verify --local -engine-node BUNDLE
//     -engine-command CMD -engine-timeout T, exactly as the slurm
//     engine's step) and sends the result back as a per-node report
//     does: a ConfigMap of its own, signed with a key of its own that
//     only its pod gets, owned by its Job. The launcher holds the node's
//     GPUs too, and is privileged with the host's network: the ranks it
//     starts on its node open the GPUs and the RDMA devices
//     (/dev/infiniband, memlock), and mpirun reaches the peers' sshd,
//     and NCCL the peers' NICs, on the hosts' own network (dnsPolicy
//     ClusterFirstWithHostNet keeps cluster names resolving beside the
//     host's).
//
// Each launch has its own number (LaunchLabel), its own copy of the
// bundle (the per-node Jobs' Secret goes with the last of them, which
// may be before a long fleet run ends) and its own report key, and is
// deleted when it ends, whatever happened, its end waiting (bounded)
// for its pods to be gone or ended, so a round of isolation pairs finds
// the nodes' GPUs free. A worker or launcher that does not start
// within the start timeout, a refusal of the API server's, or the
// -deadline, leave the test not run (runner.NotLaunched), never failed
// nor passed.
const (
	// LaunchLabel is a launch's number on its Jobs, pods, Secrets and
	// report.
	LaunchLabel = "gpuform.dev/launch"
	// RoleLabel is a launch Job's role: worker or launcher.
	RoleLabel    = "gpuform.dev/role"
	roleWorker   = "worker"
	roleLauncher = "launcher"
	launchKey    = "key"
	// shmMount is the launcher's memory-backed /dev/shm: NCCL's
	// intra-node transport needs more than a container's 64 MiB.
	shmMount = "/dev/shm"
)

func launchName(run, id string) string { return "gpuform-launch-" + run + "-" + id }
func workerName(run, id string, i int) string {
	return fmt.Sprintf("gpuform-launch-%s-%s-w%d", run, id, i)
}
func launchReportName(run, id string) string { return "gpuform-report-" + run + "-l" + id }
func launchBundleName(run, id string) string { return "gpuform-bundle-" + run + "-l" + id }
func launchKeysName(run, id string) string   { return "gpuform-keys-" + run + "-l" + id }
func launchSelector(run, id string) string   { return runSelector(run) + "," + LaunchLabel + "=" + id }
func roleSelector(run, id, role string) string {
	return launchSelector(run, id) + "," + RoleLabel + "=" + role
}

// launches runs one run's launches; launch may be called concurrently (a
// round of isolation pairs).
type launches struct {
	e      *Engine
	run    string
	bundle []byte
	byHost map[string]*member
	byNode map[string]*member
	next   atomic.Int64
}

// multiNode runs the fleet tier's multi-node tests and isolation pairs
// as launches, after every node's own Job: each host's multi-node checks,
// which its own Job left not run, are judged on them (MultiNode.JudgeHost).
func (e *Engine) multiNode(ctx context.Context, run string, members []*member, bundle []byte, ro runner.Options) runner.MultiNode {
	l := &launches{e: e, run: run, bundle: bundle, byHost: map[string]*member{}, byNode: map[string]*member{}}
	targets := make([]target.Host, len(members))
	for i, m := range members {
		targets[i] = m.tg
		l.byHost[m.tg.Host.Name] = m
		l.byNode[m.node] = m
	}
	// The command's host list names the Kubernetes nodes: the names
	// the nodes' sshd and NCCL's peers know each other by, as a
	// launcher on them does (the slurm engine gives Slurm's).
	ro.LaunchNames = func(_ context.Context, group []target.Host) map[string]string {
		out := map[string]string{}
		for _, h := range group {
			if m := l.byHost[h.Host.Name]; m != nil {
				out[h.Host.Name] = m.node
			}
		}
		return out
	}
	ro.Launch = l.launch
	if e.o.Messages != nil {
		fmt.Fprintf(e.o.Messages, "Kubernetes: run %s: the fleet tier's multi-node tests and isolation pairs as launches (a worker Job on each peer node, then a launcher Job on the group's first node).\n", run)
	}
	if !e.o.Deadline.IsZero() {
		ro.Deadline = e.o.Deadline
	}
	// The commands run on the Kubernetes nodes, never on this machine:
	// the refusal of a sim:// or local:// host's nccl_test here
	// (runner.RefuseLocalNCCL) is the CLI's, made before the run.
	ro.AllowLocal = true
	return runner.RunMultiNode(ctx, targets, ro)
}

// peers are the nodes other than from's that command runs on: those its
// host list names, and where it names a host the run does not know as a
// node (an address, another name of a node), or has no list of its own
// (none, a host file), every other node of from's group as well: a
// node the command reaches under another name holds its GPUs too.
func (l *launches) peers(from *member, command string) []*member {
	var out []*member
	seen := map[string]bool{from.node: true}
	unknown := true
	if opt, v, ok := cmdline.HostList(command); ok && !cmdline.IsHostFile(opt) {
		unknown = false
		for _, h := range strings.Split(v, ",") {
			name, _, _ := strings.Cut(strings.TrimSpace(h), ":")
			m := l.byNode[name]
			switch {
			case m == nil:
				unknown = unknown || name != ""
			case !seen[name]:
				seen[name] = true
				out = append(out, m)
			}
		}
	}
	if !unknown && len(out) > 0 {
		return out
	}
	for _, m := range l.byHost {
		if m.tg.Node == from.tg.Node && !seen[m.node] {
			seen[m.node] = true
			out = append(out, m)
		}
	}
	// A stable order: the workers' names follow it.
	slices.SortFunc(out, func(a, b *member) int { return a.index - b.index })
	return out
}

// launch runs command from host from's node within timeout (a
// runner.Options.Launch).
func (l *launches) launch(ctx context.Context, from target.Host, command string, timeout time.Duration) (nccltest.Result, error) {
	res := nccltest.Result{Command: command}
	fm := l.byHost[from.Host.Name]
	if fm == nil {
		return res, runner.NotLaunched(fmt.Errorf("spec host %s is on no Kubernetes node of the run", from.Host.Name))
	}
	id := strconv.FormatInt(l.next.Add(1)-1, 10)
	// Whatever happens, the launch's objects go when it ends (its own
	// context: the run's may be the one that ended).
	defer l.e.deleteLaunch(l.run, id)
	peers := l.peers(fm, command)
	started := time.Now()
	// A worker holds its GPUs, from its own start, while the other
	// workers start, the launcher starts and the command has its time
	// (each start within the start timeout); its SIGTERM comes sooner,
	// when the launch is deleted.
	hold := 2*l.e.o.StartTimeout + timeout + finishMargin
	if err := l.createWorkers(ctx, id, peers, fm, hold); err != nil {
		return res, runner.NotLaunched(err)
	}
	if err := l.waitStarted(ctx, id, roleWorker, len(peers), started); err != nil {
		return res, runner.NotLaunched(err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return res, runner.NotLaunched(fmt.Errorf("no report key for the launch: %w", err))
	}
	hexKey := hex.EncodeToString(key)
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	j, err := l.e.o.Client.CreateJob(cctx, l.e.o.Namespace, l.e.launcherJob(l.run, id, fm, command, timeout))
	cancel()
	if err != nil {
		return res, runner.NotLaunched(nodeError(fm.node, ": the launcher Job of %s: %w", launchName(l.run, id), err))
	}
	// The launch's bundle and key, owned by its launcher Job.
	owners := []kube.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Metadata.Name, UID: j.Metadata.UID}}
	labels := l.e.launchLabels(l.run, id, roleLauncher)
	for _, s := range []*kube.Secret{
		{Metadata: kube.Meta{Name: launchBundleName(l.run, id), Namespace: l.e.o.Namespace, Labels: labels, OwnerReferences: owners}, Type: "Opaque", Immutable: true, Data: map[string][]byte{bundleKey: l.bundle}},
		{Metadata: kube.Meta{Name: launchKeysName(l.run, id), Namespace: l.e.o.Namespace, Labels: labels, OwnerReferences: owners}, Type: "Opaque", Immutable: true, Data: map[string][]byte{launchKey: []byte(hexKey)}},
	} {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		err := l.e.o.Client.CreateSecret(cctx, s)
		cancel()
		if err != nil {
			return res, runner.NotLaunched(nodeError(fm.node, ": the launch's Secret %s: %w", s.Metadata.Name, err))
		}
	}
	lstart := time.Now()
	if err := l.waitStarted(ctx, id, roleLauncher, 1, lstart); err != nil {
		return res, runner.NotLaunched(err)
	}
	seen, failed, lost, err := l.waitEnded(ctx, id, peers, lstart.Add(l.e.o.StartTimeout+timeout+finishMargin))
	if err != nil {
		return res, err
	}
	if lost != "" {
		// The command ran, but not as a launch must: a node's GPUs
		// were no longer held, so a workload may have shared them.
		// What it measured is not taken, either way.
		return res, runner.NotLaunched(fmt.Errorf("%s; its result is not taken: that node's GPUs were not held for the test", lost))
	}
	gctx, cancel := context.WithTimeout(ctx, callTimeout)
	cm, err := l.e.o.Client.GetConfigMap(gctx, l.e.o.Namespace, launchReportName(l.run, id))
	cancel()
	var rep engineslurm.NodeReport
	if err == nil {
		rep, err = readReport(cm, l.run, j.Metadata.UID, fm.node, hexKey, true)
	}
	switch {
	case err == nil && rep.Error != "":
		return res, nodeError(fm.node, " could not launch the test (Job %s): %s", j.Metadata.Name, rep.Error)
	case err == nil:
		return *rep.NCCL, nil
	case kube.IsNotFound(err):
		err = errors.New("it wrote no report ConfigMap")
	}
	why := seen.why
	if failed != "" {
		why += "; Job " + failed
	}
	return res, nodeError(fm.node, " (launcher Job %s): %v (%s)", j.Metadata.Name, err, why)
}

// createWorkers creates the workers of launch id on peers, createParallel
// at a time.
func (l *launches) createWorkers(ctx context.Context, id string, peers []*member, from *member, hold time.Duration) error {
	errs := l.e.createJobs(ctx, len(peers), func(i int) obj {
		return l.e.workerJob(l.run, id, i, peers[i], from, hold)
	}, nil)
	for i, err := range errs {
		if err != nil {
			errs[i] = nodeError(peers[i].node, ": the worker Job %s of the launch from %s: %w", workerName(l.run, id, i), from.node, err)
		}
	}
	return errors.Join(errs...)
}

// waitStarted waits until the n pods of role in launch id run, or one
// cannot: it ended, is stuck, or has not started StartTimeout after
// since.
func (l *launches) waitStarted(ctx context.Context, id, role string, n int, since time.Time) error {
	if n == 0 {
		return nil
	}
	interval := min(250*time.Millisecond, l.e.o.Poll)
	for {
		lctx, cancel := context.WithTimeout(ctx, callTimeout)
		pods, err := l.e.o.Client.ListPods(lctx, l.e.o.Namespace, roleSelector(l.run, id, role))
		cancel()
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("no word of the launch's %s pods: %w", role, err)
		}
		running, late := 0, time.Since(since) > l.e.o.StartTimeout
		var waiting []string
		byJob := latestPods(pods)
		for _, p := range byJob {
			s := look(p)
			switch {
			case s.ended && role == roleWorker:
				return nodeError(p.Spec.NodeName, ": the launch's %s pod %s ended before the test ran: %s", role, p.Metadata.Name, s.why)
			case s.ended:
				// A launcher whose command ended at once (a program
				// not found) may end before a look sees it run: it
				// ran, and its report says how (waitEnded).
				running++
			case s.started:
				running++
			default:
				waiting = append(waiting, nodeError(p.Spec.NodeName, ": the launch's %s pod did not start within %s: %s", role, l.e.o.StartTimeout, s.why).Error())
			}
		}
		if err == nil && running == n {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("the launch's %s pods had not started: %w", role, ctx.Err())
		}
		if late {
			if len(waiting) == 0 {
				waiting = append(waiting, fmt.Sprintf("%d of the launch's %d %s Job(s) made no pod within %s", n-len(byJob), n, role, l.e.o.StartTimeout))
			}
			return errors.New(strings.Join(waiting, "; "))
		}
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
		interval = min(2*interval, l.e.o.Poll)
	}
}

// waitEnded waits for launch id's launcher pod to end (by finishBy), and
// returns what it last showed, its Job's Failed condition, and, when the
// pod of a worker on peers ended meanwhile (OOM-killed, evicted), or is
// gone or going (deleted: preempted, force-deleted, its node lost, which
// leaves no last status to see), what was seen of it.
func (l *launches) waitEnded(ctx context.Context, id string, peers []*member, finishBy time.Time) (seen podSeen, failed, lost string, err error) {
	interval := min(250*time.Millisecond, l.e.o.Poll)
	for {
		lctx, cancel := context.WithTimeout(ctx, callTimeout)
		jobs, lerr := l.e.o.Client.ListJobs(lctx, l.e.o.Namespace, roleSelector(l.run, id, roleLauncher))
		var pods []kube.Pod
		if lerr == nil {
			// The launch's pods, both roles, in one list.
			pods, lerr = l.e.o.Client.ListPods(lctx, l.e.o.Namespace, launchSelector(l.run, id))
		}
		cancel()
		if lerr == nil {
			byJob := latestPods(pods)
			for _, p := range byJob {
				if p.Metadata.Labels[RoleLabel] == roleLauncher {
					seen = look(p)
				}
			}
			// Each worker by its Job's name: a pod that is not
			// listed holds no GPU, whatever it last said.
			for i, w := range peers {
				if lost != "" {
					break
				}
				name := workerName(l.run, id, i)
				p := byJob[name]
				switch s := look(p); {
				case p == nil:
					lost = nodeError(w.node, ": the launch's worker Job %s has no pod running any more while the test ran (deleted: preempted, evicted or its node lost)", name).Error()
				case p.Metadata.DeletionTimestamp != "":
					lost = nodeError(w.node, ": the launch's worker pod %s was being deleted while the test ran: %s", p.Metadata.Name, s.why).Error()
				case s.ended:
					lost = nodeError(w.node, ": the launch's worker pod %s ended while the test ran: %s", p.Metadata.Name, s.why).Error()
				}
			}
			for i := range jobs {
				failed = jobFailed(&jobs[i])
			}
			if seen.ended || failed != "" || len(jobs) == 1 && jobs[0].Status.Succeeded > 0 {
				return seen, failed, lost, nil
			}
		}
		switch {
		case ctx.Err() != nil:
			return seen, "", lost, fmt.Errorf("the launcher had not finished: %w", ctx.Err())
		case time.Now().After(finishBy):
			return seen, "", lost, fmt.Errorf("the launcher Job %s sent no result within the test's time and the start timeout: %s", launchName(l.run, id), seen.why)
		}
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
		interval = min(2*interval, l.e.o.Poll)
	}
}

// latestPods is each Job's newest pod (a Job's backoffLimit 0 makes one,
// but a node that lost one may show two).
func latestPods(pods []kube.Pod) map[string]*kube.Pod {
	out := map[string]*kube.Pod{}
	for i := range pods {
		p := &pods[i]
		j := p.Metadata.Labels["batch.kubernetes.io/job-name"]
		if prev := out[j]; prev == nil || p.Metadata.CreationTimestamp > prev.Metadata.CreationTimestamp {
			out[j] = p
		}
	}
	return out
}

// deleteLaunch deletes launch id's Jobs (their pods with them: the
// workers' SIGTERM), Secrets and report, one call each by its label,
// bounded as the run's cleanup is (deleteObjects), and then waits for
// the launch's pods to be gone or ended (waitLaunchGone): the Jobs'
// delete is only accepted, and a pod the kubelet is still stopping
// holds its node's GPUs, so the next round of isolation pairs would
// have its worker there refused (the pair not run).
func (e *Engine) deleteLaunch(run, id string) {
	kinds, failed := e.deleteObjects(launchSelector(run, id))
	var errs []string
	jobsDeleted := true
	for i, err := range failed {
		if err != nil {
			errs = append(errs, err.Error())
			jobsDeleted = jobsDeleted && kinds[i] != "jobs"
		}
	}
	if len(errs) > 0 && e.o.Messages != nil {
		fmt.Fprintf(e.o.Messages, "Kubernetes: run %s's launch %s was not all deleted (the run's cleanup and its Jobs' ttlSecondsAfterFinished try again): %s.\n", run, id, strings.Join(errs, "; "))
	}
	if !jobsDeleted {
		// Its pods do not go with Jobs that are still there: the
		// message above says so, and waiting would not change it.
		return
	}
	left, within, err := e.waitLaunchGone(run, id)
	if e.o.Messages == nil || left == nil && err == nil {
		return
	}
	what := "its pod(s) " + strings.Join(left, ", ") + " had not ended"
	if left == nil {
		what = "no list of its pods came back (" + err.Error() + ")"
	}
	fmt.Fprintf(e.o.Messages, "Kubernetes: warning: run %s's launch %s: %s %s after its Jobs were deleted; the next launches on those nodes may find their GPUs still held (a worker the kubelet refuses leaves its pair not run, never passed).\n", run, id, what, within)
}

// waitLaunchGone waits until no pod of launch id is left that has not
// ended (gone, or Succeeded or Failed: a pod that ended holds no
// GPU), within the start timeout (a pod as slow to stop as one may be
// to start) and, with a -deadline, by the deadline and CleanupGrace,
// whichever comes first. It returns, when it gave up, the pods still
// there and not ended as last listed (nil when none was listed) and the
// last list's error; and the bound it waited within.
func (e *Engine) waitLaunchGone(run, id string) ([]string, string, error) {
	by, within := time.Now().Add(e.o.StartTimeout), fmt.Sprintf("within the start timeout (%s)", e.o.StartTimeout)
	if !e.o.Deadline.IsZero() && e.o.Deadline.Add(CleanupGrace).Before(by) {
		by, within = e.o.Deadline.Add(CleanupGrace), fmt.Sprintf("by the -deadline and its %s grace", CleanupGrace)
	}
	ctx, cancel := context.WithDeadline(context.Background(), by)
	defer cancel()
	interval := min(250*time.Millisecond, e.o.Poll)
	var left []string
	for {
		lctx, lcancel := context.WithTimeout(ctx, callTimeout)
		pods, err := e.o.Client.ListPods(lctx, e.o.Namespace, launchSelector(run, id))
		lcancel()
		if err == nil {
			left = nil
			for _, p := range pods {
				if p.Status.Phase != "Succeeded" && p.Status.Phase != "Failed" {
					left = append(left, p.Metadata.Name)
				}
			}
			if len(left) == 0 {
				return nil, within, nil
			}
		}
		select {
		case <-ctx.Done():
			return left, within, err
		case <-time.After(interval):
		}
		interval = min(2*interval, e.o.Poll)
	}
}

func (e *Engine) launchLabels(run, id, role string) map[string]string {
	l := e.labels(run)
	l[LaunchLabel], l[RoleLabel] = id, role
	return l
}

// launchJob wraps a launch's pod in its Job, its time bounded by active.
func (e *Engine) launchJob(run, id, role, name, node string, pod obj, active time.Duration) obj {
	labels := obj{}
	for key, v := range e.launchLabels(run, id, role) {
		labels[key] = v
	}
	// As a per-node Job, it ends itself by the -deadline even if
	// gpuform does not live to delete it.
	if !e.o.Deadline.IsZero() {
		active = min(active, time.Until(e.o.Deadline)+finishMargin)
	}
	secs := int64(active / time.Second)
	return obj{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": obj{"name": name, "namespace": e.o.Namespace, "labels": labels, "annotations": obj{NodeAnnotation: node}},
		"spec": obj{
			"backoffLimit":            0,
			"activeDeadlineSeconds":   max(secs, 1),
			"ttlSecondsAfterFinished": ttlAfterFinished,
			"template": obj{
				"metadata": obj{"labels": labels, "annotations": obj{NodeAnnotation: node}},
				"spec":     pod,
			},
		},
	}
}

// gpuLimit is the GPUs a launch's pod on m's node holds: all of the node
// block's.
func gpuLimit(m *member, limits obj) {
	if m.tg.Node.Hardware != nil && m.tg.Node.Hardware.GPUCount > 0 {
		limits["nvidia.com/gpu"] = strconv.Itoa(m.tg.Node.Hardware.GPUCount)
	}
}

// workerJob is the i-th worker of launch id, on peer p's node, holding
// its GPUs for hold.
func (e *Engine) workerJob(run, id string, i int, p, from *member, hold time.Duration) obj {
	k := kubeBlock(p.tg)
	limits := obj{"memory": "64Mi"}
	gpuLimit(p, limits)
	container := obj{
		"name":    "hold",
		"image":   k.Image.V,
		"command": []any{"gpuform", "verify", "--local", "-engine-hold", hold.String()},
		// Nothing but a wait: no privilege, no writes, as nobody.
		"securityContext": obj{
			"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
			"runAsNonRoot": true, "runAsUser": 65534, "runAsGroup": 65534,
			"capabilities": obj{"drop": []any{"ALL"}},
		},
		"resources":                obj{"requests": obj{"cpu": "10m", "memory": "32Mi"}, "limits": limits},
		"terminationMessagePolicy": "FallbackToLogsOnError",
	}
	pod := e.launchPod(p, container)
	pod["automountServiceAccountToken"] = false
	return e.launchJob(run, id, roleWorker, workerName(run, id, i), p.node, pod, e.o.StartTimeout+hold+finishMargin)
}

// launcherJob is launch id's launcher on from's node: it runs command
// within timeout.
func (e *Engine) launcherJob(run, id string, from *member, command string, timeout time.Duration) obj {
	k := kubeBlock(from.tg)
	fieldEnv := func(name, path string) obj {
		return obj{"name": name, "valueFrom": obj{"fieldRef": obj{"fieldPath": path}}}
	}
	limits := obj{}
	gpuLimit(from, limits)
	res := obj{"requests": obj{"cpu": "1", "memory": "1Gi"}}
	if len(limits) > 0 {
		res["limits"] = limits
	}
	container := obj{
		"name":  "launch",
		"image": k.Image.V,
		"command": []any{"gpuform", "verify", "--local",
			"-engine-node", bundleMount + "/" + bundleKey, "-engine-kube-report", launchReportName(run, id),
			"-engine-command", command, "-engine-timeout", timeout.String()},
		"env": []any{
			fieldEnv(EnvNode, "spec.nodeName"),
			fieldEnv(EnvNamespace, "metadata.namespace"),
			fieldEnv(EnvJobUID, "metadata.labels['batch.kubernetes.io/controller-uid']"),
			obj{"name": EnvRun, "value": run},
			obj{"name": EnvJob, "value": launchName(run, id)},
			obj{"name": EnvReportKey, "valueFrom": obj{"secretKeyRef": obj{"name": launchKeysName(run, id), "key": launchKey}}},
			obj{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
			obj{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility,compute"},
		},
		"terminationMessagePolicy": "FallbackToLogsOnError",
		// The ranks it starts here open the GPUs and the RDMA devices
		// (/dev/infiniband) and pin memory for them.
		"securityContext": obj{"privileged": true},
		"resources":       res,
		"volumeMounts": []any{
			obj{"name": "bundle", "mountPath": bundleMount, "readOnly": true},
			obj{"name": "shm", "mountPath": shmMount},
		},
	}
	pod := e.launchPod(from, container)
	// mpirun reaches the peers' sshd, and NCCL their NICs, on the
	// hosts' network, by the names the nodes know each other by.
	pod["hostNetwork"] = true
	pod["dnsPolicy"] = "ClusterFirstWithHostNet"
	pod["automountServiceAccountToken"] = true
	pod["volumes"] = []any{
		obj{"name": "bundle", "secret": obj{"secretName": launchBundleName(run, id), "defaultMode": 0o400}},
		obj{"name": "shm", "emptyDir": obj{"medium": "Memory"}},
	}
	return e.launchJob(run, id, roleLauncher, launchName(run, id), from.node, pod, e.o.StartTimeout+timeout+finishMargin)
}

// launchPod is the pod of a launch's container on m's node: pinned,
// never restarted, with the node block's service account, tolerations
// and priority class, as its per-node Job has them.
func (e *Engine) launchPod(m *member, container obj) obj {
	pod := obj{
		"nodeName":                      m.node,
		"restartPolicy":                 "Never",
		"serviceAccountName":            serviceAccount(kubeBlock(m.tg)),
		"terminationGracePeriodSeconds": 10,
		"containers":                    []any{container},
	}
	schedule(pod, kubeBlock(m.tg))
	return pod
}
