// Package kubernetes is the engine that lets Kubernetes carry verify to
// the nodes (verify -engine kubernetes): for each spec host, one Job
// pinned to its node (nodeName, so no scheduler decision and no
// cordon stands between the check and the node) runs gpuform verify
// --local for that node from the image the spec names (verify {
// kubernetes { image } }); the spec travels in one Secret of the run (a
// spec's variables may be sensitive), mounted read-only; each node's
// report comes back in a ConfigMap its pod creates (report.go says why
// not the termination message or logs), read with every answer bounded
// in size and the whole wait by the tier's budget, the start timeout and
// -deadline; and the reports are merged (runner.Merge) into the report
// every view renders. Every object of a run carries its run id (a label),
// so a rerun never reads an earlier run's report, and the run deletes
// its Jobs, pods, Secret and ConfigMaps when it ends, within -deadline
// and CleanupGrace; the Jobs' ttlSecondsAfterFinished and
// ownerReferences clean up after a controller that did not live to, or
// an API server that did not answer the deletes in time (the run then
// names what it may have left behind).
//
// At the fleet tier, after the nodes' own Jobs, each node group's
// multi-node tests and the isolation pairs of a failing one run as
// launches (multinode.go): a worker Job holding each peer node's GPUs,
// then a launcher Job running the command from the group's first node,
// its result back as a node's report comes; runner.RunMultiNode decides
// what to launch and MultiNode.JudgeHost judges each host on it.
//
// It talks to the API server with provision/kube (no client-go).
package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpuform/gpuform/provision/bench"
	"github.com/gpuform/gpuform/provision/engine"
	engineslurm "github.com/gpuform/gpuform/provision/engine/slurm"
	"github.com/gpuform/gpuform/provision/kube"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/provision/verify/runner"
	"github.com/gpuform/gpuform/spec"
)

// Options configure the engine.
type Options struct {
	// Client calls the API server.
	Client *kube.Client
	// Namespace holds the run's Jobs, Secret and ConfigMaps.
	Namespace string
	// Selector, when set, scopes the run to the nodes it matches (a
	// label selector): spec hosts on other nodes are left out, not
	// failed.
	Selector string
	// Deadline, when set, ends the whole run: what has not finished by
	// then is reported not run, never passed.
	Deadline time.Time
	// StartTimeout bounds how long a Job's pod may take to start;
	// DefaultStartTimeout when 0.
	StartTimeout time.Duration
	// Poll is the longest wait between looks at the Jobs (DefaultPoll
	// when 0); the first looks come sooner.
	Poll time.Duration
	// Bundle makes the spec bundle for the nodes the run verifies.
	Bundle func(nodes map[string]engineslurm.BundleNode) (*engineslurm.Bundle, error)
	// Messages, when set, gets what the run did (its id, the nodes left
	// out of its scope).
	Messages io.Writer
	// RunID names the run ("" is a random one).
	RunID string
}

// Defaults.
const (
	DefaultStartTimeout = 5 * time.Minute
	DefaultPoll         = 2 * time.Second
	// DefaultServiceAccount is the node side's identity, as gpuform
	// kubernetes manifests -engine writes it.
	DefaultServiceAccount = "gpuform-verify-node"
	// ttlAfterFinished deletes a finished Job (and, through its
	// ownerReferences, the report and the bundle) when the controller
	// did not.
	ttlAfterFinished = 600
	// finishMargin is how much longer than the tier's budget a started
	// pod may run: the binary's start and the report's trip back.
	finishMargin = time.Minute
	// createParallel is how many Jobs are created at once.
	createParallel = 16
	// callTimeout bounds each API call.
	callTimeout = 30 * time.Second
	// CleanupGrace is how long past -deadline the run may spend deleting
	// its objects: with a deadline, the whole run, cleanup included,
	// ends by the deadline and this grace, however the API server
	// answers. Without a deadline, cleanup takes at most callTimeout.
	CleanupGrace = 5 * time.Second
	// maxLeftNamed bounds how many objects a warning about a cleanup that
	// did not finish names one by one (the run's label covers them all).
	maxLeftNamed = 20
	// bundleMount is where the Job mounts the run's bundle Secret.
	bundleMount = "/etc/gpuform/bundle"
	bundleKey   = "bundle.json"
	// maxBundle bounds the bundle: a Secret is at most 1 MiB.
	maxBundle = 900 << 10
)

// Engine runs verify through Kubernetes Jobs.
type Engine struct{ o Options }

var _ engine.Engine = (*Engine)(nil)

// New returns the engine.
func New(o Options) *Engine {
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Messages != nil {
		// The launches of a round of isolation pairs run at once and
		// each may warn: one message at a time, whatever the writer.
		o.Messages = &lockedWriter{w: o.Messages}
	}
	return &Engine{o: o}
}

// lockedWriter serializes Writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Name is "kubernetes".
func (*Engine) Name() string { return engine.Kubernetes }

// NodeName is the Kubernetes node name of a spec host: verify {
// kubernetes { node_name } } applied to it, else its short name.
func NodeName(tg target.Host) (string, error) {
	tmpl := ""
	if k := kubeBlock(tg); k != nil {
		tmpl = k.NodeName.V
	}
	return spec.KubeNodeName(tmpl, tg.Host.Name)
}

func kubeBlock(tg target.Host) *spec.VerifyKubernetes {
	if tg.Node == nil || tg.Node.Verify == nil {
		return nil
	}
	return tg.Node.Verify.Kubernetes
}

// member is one spec host the run verifies on a node.
type member struct {
	tg    target.Host
	node  string
	index int
	job   string
	uid   string
	// key is the node's report key (hex): only its pod gets it (the
	// run's keys Secret, through a secretKeyRef), and only a report
	// signed with it is the node's.
	key string
	// out is its report once known.
	out  *report.Host
	seen podSeen
	// pod is the name of the member's pod the run last saw ("" before).
	pod string
}

// podSeen is what the run last saw of a member's pod.
type podSeen struct {
	started bool
	ended   bool
	why     string
	// stuck: the pod cannot start as it is (an image that cannot be
	// pulled, no place on the node), not just slow.
	stuck bool
}

// Bench is not carried by this engine yet.
func (*Engine) Bench(context.Context, []target.Host, bench.Options) (*bench.Report, error) {
	return nil, errors.New("bench -engine kubernetes is not there yet: bench over SSH (-engine ssh) or Slurm (-engine slurm)")
}

// Verify runs verify --local on every host's node as a Job and merges the
// reports.
func (e *Engine) Verify(ctx context.Context, targets []target.Host, ro runner.Options) (*report.Document, error) {
	checkedAt := time.Now().UTC()
	if e.o.Client == nil || e.o.Namespace == "" {
		return nil, errors.New("-engine kubernetes: no API client or namespace")
	}
	for _, tg := range targets {
		if k := kubeBlock(tg); k == nil || !k.Image.Set {
			return nil, fmt.Errorf("-engine kubernetes runs gpuform from an image on each node, and node block %q names none: add verify { kubernetes { image = \"…\" } }", tg.Node.Name)
		}
	}
	if !e.o.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, e.o.Deadline)
		defer cancel()
	}
	run := e.o.RunID
	if run == "" {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		run = hex.EncodeToString(b)
	}
	members, hostErr, err := e.place(ctx, targets)
	if err != nil {
		return nil, err
	}
	var mn runner.MultiNode
	ranMulti := false
	if len(members) > 0 {
		if e.o.Messages != nil {
			fmt.Fprintf(e.o.Messages, "Kubernetes: run %s: a Job per node in namespace %s (label %s=%s).\n", run, e.o.Namespace, RunLabel, run)
		}
		defer e.cleanup(run, members)
		bundle := e.runJobs(ctx, run, members, ro)
		// The fleet tier: each group's multi-node tests, and the
		// isolation of a failing one, as launches (multinode.go),
		// after the nodes' own Jobs, so a -deadline that ends them
		// leaves those checks reported.
		if ro.Tier.Includes(verify.TierFleet) && bundle != nil && ctx.Err() == nil {
			mn = e.multiNode(ctx, run, members, bundle, ro)
			ranMulti = true
		}
	}

	inRun := map[string]*member{}
	for _, m := range members {
		inRun[m.tg.Host.Name] = m
	}
	var hosts []report.Host
	var runTargets []target.Host
	for _, tg := range targets {
		name := tg.Host.Name
		if err, ok := hostErr[name]; ok {
			hosts = append(hosts, report.UnreachableHost(name, err, 0))
			runTargets = append(runTargets, tg)
			continue
		}
		m := inRun[name]
		if m == nil {
			continue
		}
		h := *m.out
		switch {
		case ranMulti:
			mn.JudgeHost(tg, &h, ro)
		case ro.Tier.Includes(verify.TierFleet):
			multiNodeNotRun(tg, &h)
		}
		runTargets = append(runTargets, tg)
		hosts = append(hosts, h)
	}
	mn.AddChecks(hosts)
	doc := runner.Merge(runTargets, hosts, ro, checkedAt)
	mn.AddIsolation(doc)
	return doc, nil
}

// multiNodeNotRun gives a host's multi-node checks, which its node's
// Job leaves not run, the reason when the run ended (its -deadline, an
// interrupt) before the group's tests were launched.
func multiNodeNotRun(tg target.Host, h *report.Host) {
	if tg.Node == nil || tg.Node.Verify == nil {
		return
	}
	for _, t := range tg.Node.Verify.NCCLTests {
		if !t.MultiNode.V {
			continue
		}
		id := verify.CheckNCCL.Named(t.Name)
		for i, c := range h.Checks {
			if c.ID == id && c.Status == verify.StatusNotRun {
				h.Checks[i].Message = "not run: the run ended (its -deadline) before the node group's multi-node tests were launched; not run, not passed"
			}
		}
	}
}

// place names the targets' nodes and keeps those of the cluster (of the
// selector's scope); hosts that cannot take part have their error.
func (e *Engine) place(ctx context.Context, targets []target.Host) ([]*member, map[string]error, error) {
	placed, hostErr := engine.Place(targets, engine.Naming{NodeName: NodeName, Scheduler: "Kubernetes", Attr: "node_name", Fix: "verify { kubernetes { node_name } }"})
	members := make([]*member, 0, len(placed))
	for _, p := range placed {
		members = append(members, &member{tg: p.Target, node: p.Node})
	}
	lctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	nodes, err := e.o.Client.NodeNames(lctx, e.o.Selector)
	if err != nil {
		for _, m := range members {
			hostErr[m.tg.Host.Name] = fmt.Errorf("cannot list the cluster's nodes to find %s: %w", m.node, err)
		}
		return nil, hostErr, nil
	}
	in := map[string]bool{}
	for _, n := range nodes {
		in[n] = true
	}
	var kept, out []*member
	for _, m := range members {
		switch {
		case in[m.node]:
			m.index = len(kept)
			kept = append(kept, m)
		case e.o.Selector != "":
			out = append(out, m)
		default:
			hostErr[m.tg.Host.Name] = fmt.Errorf("spec host %s: the cluster has no node %s (it lists %d nodes); set verify { kubernetes { node_name } } if the node is named otherwise", m.tg.Host.Name, m.node, len(nodes))
		}
	}
	if e.o.Selector != "" {
		if len(kept) == 0 {
			return nil, nil, fmt.Errorf("-selector %s matches %d node(s), none of them a host of the spec (node names are verify { kubernetes { node_name } } of each host, else its short name)", e.o.Selector, len(nodes))
		}
		if len(out) > 0 && e.o.Messages != nil {
			var names []string
			for _, m := range out {
				names = append(names, m.node)
			}
			fmt.Fprintf(e.o.Messages, "Kubernetes: spec host node(s) %s are outside -selector %s; not verified.\n", strings.Join(names, ","), e.o.Selector)
		}
	}
	return kept, hostErr, nil
}

func runSelector(run string) string { return RunLabel + "=" + run }

func jobName(run string, i int) string    { return fmt.Sprintf("gpuform-verify-%s-%d", run, i) }
func reportName(run string, i int) string { return fmt.Sprintf("gpuform-report-%s-%d", run, i) }
func bundleName(run string) string        { return "gpuform-bundle-" + run }
func keysName(run string) string          { return "gpuform-keys-" + run }
func keyName(i int) string                { return "key-" + strconv.Itoa(i) }

// runJobs creates the Jobs and the bundle, waits for the reports and sets
// every member's out. It returns the bundle, for the run's launches (nil
// when there is none).
func (e *Engine) runJobs(ctx context.Context, run string, members []*member, ro runner.Options) []byte {
	started := time.Now()
	fail := func(m *member, err error) {
		h := report.UnreachableHost(m.tg.Host.Name, err, time.Since(started))
		m.out = &h
	}
	bnodes := map[string]engineslurm.BundleNode{}
	for _, m := range members {
		bnodes[m.node] = engineslurm.BundleNode{Host: m.tg.Host.Name, Node: m.tg.Node.Name}
	}
	var bundle []byte
	b, err := e.bundle(bnodes)
	if err == nil {
		bundle, err = json.Marshal(b)
	}
	if err == nil && len(bundle) > maxBundle {
		err = fmt.Errorf("the spec bundle is %d bytes, more than the %d a Secret holds", len(bundle), maxBundle)
	}
	if err != nil {
		for _, m := range members {
			fail(m, fmt.Errorf("cannot bundle the spec for the nodes: %w", err))
		}
		return nil
	}
	budget := ro.Budget
	if budget == 0 {
		budget = ro.Tier.Budget()
	}
	// The Job ends itself (activeDeadlineSeconds) by the time the run
	// stops waiting for it, even if gpuform does not live to delete it.
	active := e.o.StartTimeout + budget + finishMargin
	if !e.o.Deadline.IsZero() {
		active = min(active, time.Until(e.o.Deadline)+finishMargin)
	}
	// The Jobs, createParallel at a time: a fleet of thousands is not
	// thousands of round trips end to end.
	for _, m := range members {
		k := make([]byte, 32)
		if _, err := rand.Read(k); err != nil {
			fail(m, fmt.Errorf("no report key for the node: %w", err))
			continue
		}
		m.key = hex.EncodeToString(k)
	}
	errs := e.createJobs(ctx, len(members), func(i int) obj {
		if members[i].out != nil {
			return nil
		}
		return e.job(run, members[i], ro.Tier, active)
	}, func(i int, j *kube.Job) {
		members[i].job, members[i].uid = j.Metadata.Name, j.Metadata.UID
	})
	var owners []kube.OwnerReference
	keys := map[string][]byte{}
	for i, m := range members {
		if m.out != nil {
			continue
		}
		if errs[i] != nil {
			fail(m, nodeError(m.node, ": %w", errs[i]))
			continue
		}
		owners = append(owners, kube.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: m.job, UID: m.uid})
		keys[keyName(m.index)] = []byte(m.key)
	}
	if len(owners) == 0 {
		return nil
	}
	// The bundle after the Jobs, owned by them all: it goes with the last
	// of them. A pod created first waits for its volume a moment.
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	err = e.o.Client.CreateSecret(cctx, &kube.Secret{
		Metadata: kube.Meta{Name: bundleName(run), Namespace: e.o.Namespace, Labels: e.labels(run), OwnerReferences: owners},
		Type:     "Opaque", Immutable: true, Data: map[string][]byte{bundleKey: bundle},
	})
	cancel()
	if err == nil {
		// The nodes' report keys in a Secret of their own, which no
		// pod mounts: each pod's env takes its own key from it.
		cctx, cancel = context.WithTimeout(ctx, callTimeout)
		err = e.o.Client.CreateSecret(cctx, &kube.Secret{
			Metadata: kube.Meta{Name: keysName(run), Namespace: e.o.Namespace, Labels: e.labels(run), OwnerReferences: owners},
			Type:     "Opaque", Immutable: true, Data: keys,
		})
		cancel()
	}
	if err != nil {
		for _, m := range members {
			if m.out == nil {
				fail(m, nodeError(m.node, ": the run's spec bundle and report keys Secrets: %w", err))
			}
		}
		return nil
	}
	e.wait(ctx, run, members, started, budget)
	return bundle
}

// bundle is the CLI's bundle of the spec for nodes.
func (e *Engine) bundle(nodes map[string]engineslurm.BundleNode) (*engineslurm.Bundle, error) {
	if e.o.Bundle == nil {
		return nil, errors.New("no spec bundle (Options.Bundle)")
	}
	return e.o.Bundle(nodes)
}

func (e *Engine) labels(run string) map[string]string {
	return map[string]string{RunLabel: run, appLabel: appName, "app.kubernetes.io/part-of": "gpuform"}
}

type obj = map[string]any

// job is the Job the engine makes for member m, its pod's time bounded
// by active.
func (e *Engine) job(run string, m *member, tier verify.Tier, active time.Duration) obj {
	k := kubeBlock(m.tg)
	labels := obj{}
	for key, v := range e.labels(run) {
		labels[key] = v
	}
	labels[IndexLabel] = strconv.Itoa(m.index)
	fieldEnv := func(name, path string) obj {
		return obj{"name": name, "valueFrom": obj{"fieldRef": obj{"fieldPath": path}}}
	}
	container := obj{
		"name":  "verify",
		"image": k.Image.V,
		"command": []any{"gpuform", "verify", "--local",
			"-engine-node", bundleMount + "/" + bundleKey, "-engine-kube-report", reportName(run, m.index),
			// The node's packages and /etc, not the image's, for the
			// spec.* checks.
			"-host-root", kube.HostRootMount},
		"env": []any{
			fieldEnv(EnvNode, "spec.nodeName"),
			fieldEnv(EnvNamespace, "metadata.namespace"),
			fieldEnv(EnvJobUID, "metadata.labels['batch.kubernetes.io/controller-uid']"),
			obj{"name": EnvRun, "value": run},
			obj{"name": EnvJob, "value": jobName(run, m.index)},
			obj{"name": EnvReportKey, "valueFrom": obj{"secretKeyRef": obj{"name": keysName(run), "key": keyName(m.index)}}},
			// The NVIDIA container runtime mounts the GPUs and the
			// driver's libraries (NVML, DCGM, NCCL's).
			obj{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"},
			obj{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility,compute"},
		},
		// gpuform's error on standard error becomes the pod's
		// termination message when it fails without a report.
		"terminationMessagePolicy": "FallbackToLogsOnError",
		// The GPUs' device files and /dev/kmsg (Xids).
		"securityContext": obj{"privileged": true},
		"volumeMounts": []any{
			obj{"name": "bundle", "mountPath": bundleMount, "readOnly": true},
			obj{"name": "kmsg", "mountPath": "/dev/kmsg", "readOnly": true},
			kube.HostRootVolumeMount(),
		},
	}
	res := obj{"requests": obj{"cpu": "100m", "memory": "128Mi"}, "limits": obj{"memory": "1Gi"}}
	if tier.Includes(verify.TierQuick) && m.tg.Node.Hardware != nil && m.tg.Node.Hardware.GPUCount > 0 {
		// DCGM diagnostics and nccl-tests load the GPUs: the pod
		// holds all of them, so the kubelet admits it only when no
		// workload does. The probe tier only reads, beside them.
		n := strconv.Itoa(m.tg.Node.Hardware.GPUCount)
		res["limits"].(obj)["nvidia.com/gpu"] = n
	}
	container["resources"] = res
	pod := obj{
		"nodeName":                      m.node,
		"restartPolicy":                 "Never",
		"serviceAccountName":            serviceAccount(k),
		"automountServiceAccountToken":  true,
		"terminationGracePeriodSeconds": 10,
		"containers":                    []any{container},
		"volumes": []any{
			obj{"name": "bundle", "secret": obj{"secretName": bundleName(run), "defaultMode": 0o400}},
			obj{"name": "kmsg", "hostPath": obj{"path": "/dev/kmsg", "type": "CharDevice"}},
			kube.HostRootVolume(),
		},
	}
	schedule(pod, k)
	secs := int64(active / time.Second)
	return obj{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": obj{"name": jobName(run, m.index), "namespace": e.o.Namespace, "labels": labels,
			"annotations": obj{NodeAnnotation: m.node}},
		"spec": obj{
			// A failed check is the report, not a reason to try again.
			"backoffLimit":            0,
			"activeDeadlineSeconds":   max(secs, 1),
			"ttlSecondsAfterFinished": ttlAfterFinished,
			"template": obj{
				"metadata": obj{"labels": labels, "annotations": obj{NodeAnnotation: m.node}},
				"spec":     pod,
			},
		},
	}
}

// serviceAccount is the node side's service account: verify {
// kubernetes { service_account } }, else DefaultServiceAccount.
func serviceAccount(k *spec.VerifyKubernetes) string {
	if k.ServiceAccount.Set {
		return k.ServiceAccount.V
	}
	return DefaultServiceAccount
}

// schedule gives pod the node block's tolerations and priority class.
func schedule(pod obj, k *spec.VerifyKubernetes) {
	var tolerations []any
	for _, t := range k.Tolerations {
		to := obj{"key": t.Key, "operator": t.Operator}
		if t.Value != "" {
			to["value"] = t.Value
		}
		if t.Effect != "" {
			to["effect"] = t.Effect
		}
		tolerations = append(tolerations, to)
	}
	if len(tolerations) > 0 {
		pod["tolerations"] = tolerations
	}
	if k.PriorityClass.Set {
		pod["priorityClassName"] = k.PriorityClass.V
	}
}

// stuckReasons are the waiting reasons of a container that will not
// start as it is.
var stuckReasons = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", "CreateContainerConfigError", "CreateContainerError", "RunContainerError"}

// look reads what the pod of a member shows.
func look(p *kube.Pod) podSeen {
	if p == nil {
		return podSeen{why: "its Job has made no pod yet"}
	}
	s := podSeen{why: "pod " + p.Metadata.Name + " is " + strings.ToLower(p.Status.Phase)}
	switch p.Status.Phase {
	case "Running":
		s.started = true
	case "Succeeded", "Failed":
		s.started, s.ended = true, true
	}
	detail := func(reason, msg string) {
		if reason != "" {
			s.why += ": " + reason
		}
		if msg != "" {
			s.why += ": " + oneLine(msg, 400)
		}
	}
	if p.Status.Reason != "" || p.Status.Message != "" {
		detail(p.Status.Reason, p.Status.Message)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == "PodScheduled" && c.Status == "False" {
			s.stuck = true
			detail(c.Reason, c.Message)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		switch st := cs.State; {
		case st.Waiting != nil:
			detail(st.Waiting.Reason, st.Waiting.Message)
			s.stuck = s.stuck || slices.Contains(stuckReasons, st.Waiting.Reason)
		case st.Running != nil:
			s.started = true
		case st.Terminated != nil:
			s.started, s.ended = true, true
			s.why += fmt.Sprintf(": exit %d", st.Terminated.ExitCode)
			detail(st.Terminated.Reason, st.Terminated.Message)
		}
	}
	return s
}

// oneLine is s on one line, at most n bytes of its end (an error's last
// words say most).
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// jobFailed is a Job's Failed condition's words, "" when it has none.
func jobFailed(j *kube.Job) string {
	if j == nil {
		return ""
	}
	for _, c := range j.Status.Conditions {
		if c.Type == "Failed" && c.Status == "True" {
			return strings.TrimSpace(c.Reason + ": " + c.Message)
		}
	}
	return ""
}

// wait watches the run's Jobs and pods (one list of each per poll,
// whatever the number of nodes) until every member has its report or
// cannot have one.
func (e *Engine) wait(ctx context.Context, run string, members []*member, started time.Time, budget time.Duration) {
	finishBy := started.Add(e.o.StartTimeout + budget + finishMargin)
	// Quick looks first (a probe-tier node reports in seconds), then
	// every Poll: a long run costs the API server little.
	interval := min(250*time.Millisecond, e.o.Poll)
	var lastErr error
	pending := func() int {
		n := 0
		for _, m := range members {
			if m.out == nil {
				n++
			}
		}
		return n
	}
	for pending() > 0 {
		lctx, cancel := context.WithTimeout(ctx, callTimeout)
		jobs, jerr := e.o.Client.ListJobs(lctx, e.o.Namespace, runSelector(run))
		var pods []kube.Pod
		perr := jerr
		if jerr == nil {
			pods, perr = e.o.Client.ListPods(lctx, e.o.Namespace, runSelector(run))
		}
		cancel()
		if perr != nil {
			if ctx.Err() == nil {
				lastErr = perr
			}
		} else {
			lastErr = nil
			e.observe(ctx, run, members, jobs, pods, started)
		}
		if pending() == 0 || ctx.Err() != nil || time.Now().After(finishBy) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(interval):
		}
		interval = min(2*interval, e.o.Poll)
	}
	cut := !e.o.Deadline.IsZero() && ctx.Err() != nil
	took := time.Since(started)
	for _, m := range members {
		if m.out != nil {
			continue
		}
		name := m.tg.Host.Name
		var h report.Host
		switch {
		case lastErr != nil:
			h = report.UnreachableHost(name, nodeError(m.node, " (Job %s): no word of its Job: %w", m.job, lastErr), took)
		case cut && (m.seen.started || !m.seen.stuck):
			h = notFinished(name, m.node, m.job, m.seen, took)
		case !m.seen.started:
			h = report.UnreachableHost(name, nodeError(m.node, ": Job %s's pod did not start in %s: %s", m.job, took.Round(time.Second), m.seen.why), took)
		default:
			h = report.UnreachableHost(name, nodeError(m.node, ": Job %s sent no report within the tier's budget and the start timeout (%s): %s", m.job, took.Round(time.Second), m.seen.why), took)
		}
		m.out = &h
	}
}

// observe files what the Jobs and pods show: a member whose pod ended
// gets its report (or why there is none); one whose pod is stuck past
// the start timeout gets why.
func (e *Engine) observe(ctx context.Context, run string, members []*member, jobs []kube.Job, pods []kube.Pod, started time.Time) {
	jobOf := map[string]*kube.Job{}
	for i := range jobs {
		if jobs[i].Metadata.Labels[RunLabel] == run {
			jobOf[jobs[i].Metadata.Name] = &jobs[i]
		}
	}
	podOf := map[string]*kube.Pod{}
	for i := range pods {
		p := &pods[i]
		idx := p.Metadata.Labels[IndexLabel]
		if prev := podOf[idx]; prev == nil || p.Metadata.CreationTimestamp > prev.Metadata.CreationTimestamp {
			podOf[idx] = p
		}
	}
	for _, m := range members {
		if m.out != nil {
			continue
		}
		j := jobOf[m.job]
		p := podOf[strconv.Itoa(m.index)]
		if p != nil && p.Spec.NodeName != m.node {
			p = nil // not the pod the Job pinned
		}
		m.seen = look(p)
		if p != nil {
			m.pod = p.Metadata.Name
		}
		failed := jobFailed(j)
		if !m.seen.ended && failed == "" && j != nil && j.Status.Succeeded == 0 {
			if !m.seen.started && time.Since(started) > e.o.StartTimeout {
				h := report.UnreachableHost(m.tg.Host.Name, nodeError(m.node, ": Job %s's pod did not start within %s: %s", m.job, e.o.StartTimeout, m.seen.why), time.Since(started))
				m.out = &h
			}
			continue
		}
		if j == nil && !m.seen.ended {
			continue
		}
		m.out = e.collect(ctx, run, m, failed, time.Since(started))
	}
}

// collect reads a finished member's report; without one, its error names
// the node, the Job and what the pod and the Job said.
func (e *Engine) collect(ctx context.Context, run string, m *member, jobFailed string, took time.Duration) *report.Host {
	name := m.tg.Host.Name
	gctx, cancel := context.WithTimeout(ctx, callTimeout)
	cm, err := e.o.Client.GetConfigMap(gctx, e.o.Namespace, reportName(run, m.index))
	cancel()
	var rep engineslurm.NodeReport
	if err == nil {
		rep, err = readReport(cm, run, m.uid, m.node, m.key, false)
	}
	if err == nil && rep.Error != "" {
		h := report.UnreachableHost(name, fmt.Errorf("verify --local could not run on Kubernetes node %s: %s", m.node, rep.Error), took)
		return &h
	}
	if err == nil {
		h := rep.HostReports()[0]
		h.Host = name
		return &h
	}
	why := m.seen.why
	if jobFailed != "" {
		why += "; Job " + jobFailed
	}
	if kube.IsNotFound(err) {
		err = errors.New("it wrote no report ConfigMap")
	}
	h := report.UnreachableHost(name, nodeError(m.node, " (Job %s): %v (%s)", m.job, err, why), took)
	return &h
}

// nodeError is an error about a member's node: "Kubernetes node N"
// and format.
func nodeError(node, format string, args ...any) error {
	return fmt.Errorf("%s"+format, append([]any{"Kubernetes node " + node}, args...)...)
}

// notFinished is a host whose checks the -deadline cut: not run, and held
// against the host (a gate passes only what it checked).
func notFinished(host, node, job string, seen podSeen, took time.Duration) report.Host {
	return report.Host{Host: host, Duration: took, Checks: []verify.CheckResult{{
		ID: string(verify.CheckReachable), Status: verify.StatusNotRun, Needed: true, Expected: "checks finished", Observed: "not finished",
		Message: fmt.Sprintf("the -deadline ended before Kubernetes node %s's checks finished (Job %s: %s); not run, not passed", node, job, seen.why),
	}}}
}

// cleanup deletes the run's Jobs (their pods with them), its report
// ConfigMaps and its Secrets: one call each, by the run's label, the
// three at once, so that one the API server does not answer keeps none
// of the others from being asked. With a -deadline they end by the
// deadline and CleanupGrace (a run cut by the deadline still gets the
// grace, and one that ended early no more than callTimeout); without
// one, by callTimeout. What could not be deleted is named in a warning,
// with how it goes away by itself and how to remove it now.
func (e *Engine) cleanup(run string, members []*member) {
	kinds, errs := e.deleteObjects(runSelector(run))
	var why []string
	failed := map[string]bool{}
	for i, err := range errs {
		if err != nil {
			failed[kinds[i]] = true
			why = append(why, err.Error())
		}
	}
	if len(why) == 0 || e.o.Messages == nil {
		return
	}
	within := fmt.Sprintf("within %s", callTimeout)
	if !e.o.Deadline.IsZero() {
		within = fmt.Sprintf("by the -deadline and its %s grace", CleanupGrace)
	}
	left := e.leftBehind(run, members, failed)
	fmt.Fprintf(e.o.Messages, "Kubernetes: warning: run %s's objects were not all deleted (its cleanup ends %s): %s. It may have left behind: %s. "+
		"Each carries the label %s=%s; the Jobs' ttlSecondsAfterFinished (%d s) deletes them once finished, and their ownerReferences take the pods, the report ConfigMaps and the Secrets with them. "+
		"To remove them now: kubectl delete jobs,pods,configmaps,secrets -n %s -l %s=%s\n",
		run, within, strings.Join(why, "; "), left, RunLabel, run, ttlAfterFinished, e.o.Namespace, RunLabel, run)
}

// createJobs creates job(i) for each i below n (none where job returns
// nil), createParallel at a time, each call bounded by callTimeout, and
// hands each created Job to created; it returns each create's error,
// index for index. The per-node Jobs and a launch's workers alike.
func (e *Engine) createJobs(ctx context.Context, n int, job func(i int) obj, created func(i int, j *kube.Job)) []error {
	errs := make([]error, n)
	sem := make(chan struct{}, createParallel)
	var wg sync.WaitGroup
	for i := range n {
		spec := job(i)
		if spec == nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			defer cancel()
			j, err := e.o.Client.CreateJob(cctx, e.o.Namespace, spec)
			if err != nil {
				errs[i] = err
				return
			}
			if created != nil {
				created(i, j)
			}
		}()
	}
	wg.Wait()
	return errs
}

// deleteObjects deletes the Jobs (their pods with them), ConfigMaps and
// Secrets that selector matches, the three asked at once so one that
// hangs keeps none of the others from being asked, and all of it ended
// within callTimeout and, with a -deadline, by the deadline and
// CleanupGrace: the run's cleanup and a launch's alike, so neither holds
// the run past its deadline on an API server that stopped answering. It
// returns the kinds and, index for index, each delete's error.
func (e *Engine) deleteObjects(selector string) ([]string, []error) {
	by := time.Now().Add(callTimeout)
	if !e.o.Deadline.IsZero() {
		by = minTime(by, e.o.Deadline.Add(CleanupGrace))
	}
	ctx, cancel := context.WithDeadline(context.Background(), by)
	defer cancel()
	kinds := []string{"jobs", "configmaps", "secrets"}
	errs := make([]error, len(kinds))
	var wg sync.WaitGroup
	for i, res := range kinds {
		wg.Go(func() {
			errs[i] = e.o.Client.DeleteCollection(ctx, e.o.Namespace, res, selector)
		})
	}
	wg.Wait()
	return kinds, errs
}

// leftBehind names (kind name in namespace) the objects of the run of
// the kinds whose delete failed: the Jobs the run created and the pods
// it saw of them, the members' report ConfigMaps (a pod may have written
// its own) and the run's two Secrets; at most maxLeftNamed of them, then
// how many more.
func (e *Engine) leftBehind(run string, members []*member, failed map[string]bool) string {
	var names []string
	add := func(kind, name string) {
		names = append(names, kind+" "+name+" in namespace "+e.o.Namespace)
	}
	jobs := false
	for _, m := range members {
		if m.job == "" {
			continue
		}
		jobs = true
		if failed["jobs"] {
			add("Job", m.job)
			if m.pod != "" {
				add("Pod", m.pod)
			}
		}
		if failed["configmaps"] {
			add("ConfigMap", reportName(run, m.index))
		}
	}
	if jobs && failed["secrets"] {
		add("Secret", bundleName(run))
		add("Secret", keysName(run))
	}
	if len(names) == 0 {
		return "no object the run knows of (the run's label finds any)"
	}
	if len(names) > maxLeftNamed {
		return strings.Join(names[:maxLeftNamed], ", ") + fmt.Sprintf(" and %d more", len(names)-maxLeftNamed)
	}
	return strings.Join(names, ", ")
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
