package kubernetes

import (
	"context"
	"strings"
	"testing"
	"time"

	engineslurm "github.com/gpuform/gpuform/provision/engine/slurm"
	"github.com/gpuform/gpuform/provision/kube"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/provision/verify/runner"
	"github.com/gpuform/gpuform/spec"
)

// A report ConfigMap is taken for a node's report only when it is of the
// run, owned by the node's Job, signed with the node's report key and
// names the node; anything else is a failure naming why, never another
// run's report nor one another pod wrote.
func TestReadReport(t *testing.T) {
	t.Parallel()
	z, err := encodeReport(engineslurm.NewNodeReport("gpu011", []report.Host{{Host: "local://gpu011"}}))
	if err != nil {
		t.Fatal(err)
	}
	const key = "k-gpu011"
	good := func() *kube.ConfigMap {
		return &kube.ConfigMap{Metadata: kube.Meta{Name: "gpuform-report-r1-0", Labels: map[string]string{RunLabel: "r1"},
			Annotations:     map[string]string{MACAnnotation: reportMAC(key, "r1", "gpu011", z)},
			OwnerReferences: []kube.OwnerReference{{Kind: "Job", Name: "gpuform-verify-r1-0", UID: "uid-1"}}},
			BinaryData: map[string][]byte{reportKey: z}}
	}
	if rep, err := readReport(good(), "r1", "uid-1", "gpu011", key, false); err != nil || len(rep.HostReports()) != 1 {
		t.Fatalf("the good report: %+v, %v", rep, err)
	}
	for _, c := range []struct {
		name   string
		change func(*kube.ConfigMap)
		run    string
		node   string
		want   string
	}{
		{"an earlier run's", func(*kube.ConfigMap) {}, "r2", "gpu011", `labelled run "r1", not "r2"`},
		{"not the Job's", func(cm *kube.ConfigMap) { cm.Metadata.OwnerReferences[0].UID = "uid-other" }, "r1", "gpu011", "not owned by the run's Job"},
		{"another node's", func(cm *kube.ConfigMap) {
			cm.Metadata.Annotations[MACAnnotation] = reportMAC(key, "r1", "gpu012", z)
		}, "r1", "gpu012", `names node "gpu011"`},
		{"no report", func(cm *kube.ConfigMap) { delete(cm.BinaryData, reportKey) }, "r1", "gpu011", "has no report.json.gz"},
		{"not gzip", func(cm *kube.ConfigMap) {
			cm.BinaryData[reportKey] = []byte("{}")
			cm.Metadata.Annotations[MACAnnotation] = reportMAC(key, "r1", "gpu011", cm.BinaryData[reportKey])
		}, "r1", "gpu011", "not gzip"},
		// What a pod on another node can write, knowing all a pod list
		// shows (the run, the Job's uid, the node's name), but not
		// the node's key: a passing report for a node it is not.
		{"unsigned", func(cm *kube.ConfigMap) { delete(cm.Metadata.Annotations, MACAnnotation) }, "r1", "gpu011", "not signed with the node's report key"},
		{"signed with another node's key", func(cm *kube.ConfigMap) {
			cm.Metadata.Annotations[MACAnnotation] = reportMAC("k-gpu012", "r1", "gpu011", z)
		}, "r1", "gpu011", "not signed with the node's report key"},
		{"changed after signing", func(cm *kube.ConfigMap) {
			other, err := encodeReport(engineslurm.NewNodeReport("gpu011", []report.Host{{Host: "local://gpu011", Checks: []verify.CheckResult{{ID: "gpu.count", Status: verify.StatusPass}}}}))
			if err != nil {
				t.Fatal(err)
			}
			cm.BinaryData[reportKey] = other
		}, "r1", "gpu011", "not signed with the node's report key"},
		{"another run's signature", func(cm *kube.ConfigMap) {
			cm.Metadata.Labels[RunLabel] = "r2"
			cm.Metadata.Annotations[MACAnnotation] = reportMAC(key, "r1", "gpu011", z)
		}, "r2", "gpu011", "not signed with the node's report key"},
	} {
		cm := good()
		c.change(cm)
		if _, err := readReport(cm, c.run, "uid-1", c.node, key, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// A launch's report holds its command's result and a node's its host:
	// neither is taken for the other, however well signed.
	if _, err := readReport(good(), "r1", "uid-1", "gpu011", key, true); err == nil || !strings.Contains(err.Error(), "holds no result of the launch's command") {
		t.Errorf("a node's report read as a launch's: %v", err)
	}
	lz, err := encodeReport(engineslurm.NodeReport{Node: "gpu011", NCCL: &nccltest.Result{Command: "mpirun all_reduce_perf"}})
	if err != nil {
		t.Fatal(err)
	}
	launch := good()
	launch.BinaryData[reportKey] = lz
	launch.Metadata.Annotations[MACAnnotation] = reportMAC(key, "r1", "gpu011", lz)
	if rep, err := readReport(launch, "r1", "uid-1", "gpu011", key, true); err != nil || rep.NCCL == nil || rep.NCCL.Command != "mpirun all_reduce_perf" {
		t.Errorf("the launch's report: %+v, %v", rep, err)
	}
	if _, err := readReport(launch, "r1", "uid-1", "gpu011", key, false); err == nil || !strings.Contains(err.Error(), "holds no host") {
		t.Errorf("a launch's report read as a node's: %v", err)
	}
}

// What the run says of a pod names the kubelet's reason, and a pod that
// cannot start as it is (an image it cannot pull, no place) is stuck.
func TestLook(t *testing.T) {
	t.Parallel()
	pod := func(phase, waiting string) *kube.Pod {
		p := &kube.Pod{}
		p.Metadata.Name = "p"
		p.Status.Phase = phase
		if waiting != "" {
			var cs struct {
				Name  string              `json:"name"`
				State kube.ContainerState `json:"state"`
			}
			cs.State.Waiting = &struct {
				Reason  string `json:"reason,omitempty"`
				Message string `json:"message,omitempty"`
			}{Reason: waiting, Message: "m"}
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, cs)
		}
		return p
	}
	for _, c := range []struct {
		name                  string
		p                     *kube.Pod
		started, ended, stuck bool
		why                   string
	}{
		{"no pod", nil, false, false, false, "its Job has made no pod yet"},
		{"pulling", pod("Pending", "ContainerCreating"), false, false, false, "pod p is pending: ContainerCreating: m"},
		{"no image", pod("Pending", "ImagePullBackOff"), false, false, true, "pod p is pending: ImagePullBackOff: m"},
		{"running", pod("Running", ""), true, false, false, "pod p is running"},
		{"failed", pod("Failed", ""), true, true, false, "pod p is failed"},
	} {
		s := look(c.p)
		if s.started != c.started || s.ended != c.ended || s.stuck != c.stuck || s.why != c.why {
			t.Errorf("%s: %+v", c.name, s)
		}
	}
}

// At the fleet tier a host's multi-node tests, which its node's Job
// cannot run, stay not run (and needed) with the engine's reason when the
// run ended before they were launched; its other checks are untouched.
func TestMultiNodeNotRun(t *testing.T) {
	t.Parallel()
	tg := target.Host{Node: &spec.Node{Verify: &spec.Verify{NCCLTests: []*spec.NCCLTest{
		{Name: "fleet", MultiNode: spec.Attr[bool]{V: true, Set: true}},
		{Name: "local"},
	}}}}
	h := report.Host{Checks: []verify.CheckResult{
		{ID: verify.CheckNCCL.Named("fleet"), Status: verify.StatusNotRun, Needed: true, Message: "not run: no run of it was made for this host"},
		{ID: verify.CheckNCCL.Named("local"), Status: verify.StatusNotRun, Message: "left to a deeper tier"},
	}}
	multiNodeNotRun(tg, &h)
	if c := h.Checks[0]; c.Status != verify.StatusNotRun || !c.Needed || !strings.Contains(c.Message, "before the node group's multi-node tests were launched") {
		t.Errorf("the multi-node test: %+v", c)
	}
	if c := h.Checks[1]; c.Message != "left to a deeper tier" {
		t.Errorf("the single-node test was changed: %+v", c)
	}
}

// A node block without verify { kubernetes { image } } is an error before
// anything is asked of the API server: there is nothing to run.
func TestNoImage(t *testing.T) {
	t.Parallel()
	c, err := kube.New(kube.Config{Server: "https://127.0.0.1:1"}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	tg := target.Host{Host: spec.Host{Name: "gpu001"}, Node: &spec.Node{Name: "train"}}
	_, err = New(Options{Client: c, Namespace: "ns"}).Verify(context.Background(), []target.Host{tg}, runner.Options{})
	if err == nil || !strings.Contains(err.Error(), `node block "train" names none: add verify { kubernetes { image = "…" } }`) {
		t.Errorf("err = %v", err)
	}
}
