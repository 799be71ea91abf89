package kubernetes

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/kubetest"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/spec"
)

// The Job of a quick-tier run, with every setting of verify {
// kubernetes }, passes the real API server's validation (server-side dry
// run, unknown fields refused): the downward API's paths, the volumes,
// the GPUs it holds, the tolerations and the priority class. The probe
// tier's Job is created for real in cmd/gpuform's TestKubeEngine.
func TestJobPassesTheAPIServer(t *testing.T) {
	t.Parallel()
	tol, err := spec.ParseToleration("example.com/maintenance=rack7:NoExecute")
	if err != nil {
		t.Fatal(err)
	}
	node := &spec.Node{Name: "gpu", Hardware: &spec.Hardware{GPUCount: 8}, Verify: &spec.Verify{Kubernetes: &spec.VerifyKubernetes{
		Image:          spec.Attr[string]{V: "registry.example.com/gpuform:0.1.0", Set: true},
		ServiceAccount: spec.Attr[string]{V: "gpuform-verify-node", Set: true},
		PriorityClass:  spec.Attr[string]{V: "system-node-critical", Set: true},
		Tolerations:    []spec.Toleration{tol},
	}}}
	e := New(Options{Namespace: "default"})
	m := &member{tg: target.Host{Host: spec.Host{Name: "gpu007.example.com"}, Node: node}, node: "gpu007", index: 3}
	job := e.job("ab12cd34", m, verify.TierQuick, 7*time.Minute)
	b, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	// What the operator relies on, before the server judges it.
	for _, want := range []string{`"nodeName":"gpu007"`, `"nvidia.com/gpu":"8"`, `"backoffLimit":0`, `"ttlSecondsAfterFinished":600`, `"activeDeadlineSeconds":420`,
		`"gpuform.dev/run":"ab12cd34"`, `"-engine-kube-report","gpuform-report-ab12cd34-3"`, `"secretName":"gpuform-bundle-ab12cd34"`, `"operator":"Equal"`,
		`"-host-root","/host"`, `{"hostPath":{"path":"/","type":"Directory"},"name":"host-root"}`, `{"mountPath":"/host","name":"host-root","readOnly":true,"recursiveReadOnly":"IfPossible"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the Job lacks %s:\n%s", want, b)
		}
	}
	// The probe tier only reads: it holds no GPU, so it runs beside
	// the node's workloads.
	probe, _ := json.Marshal(e.job("ab12cd34", m, verify.TierProbe, time.Minute))
	if strings.Contains(string(probe), "nvidia.com/gpu") {
		t.Errorf("the probe tier's Job holds GPUs:\n%s", probe)
	}
	kc := kubetest.Start(t, kubetest.Options{})
	kc.Request(t, http.MethodPost, "/apis/batch/v1/namespaces/default/jobs?dryRun=All&fieldValidation=Strict", "application/json", string(b))

	// A launch's two roles (multinode.go), with the same settings.
	peer := &member{tg: m.tg, node: "gpu008", index: 4}
	worker, _ := json.Marshal(e.workerJob("ab12cd34", "2", 0, peer, m, 10*time.Minute))
	launcher, _ := json.Marshal(e.launcherJob("ab12cd34", "2", m, "mpirun -np 16 -H gpu007:8,gpu008:8 all_reduce_perf -b 8M -e 8G -f 2 -g 1", 9*time.Minute))
	for _, c := range []struct {
		name      string
		job       []byte
		want, not []string
	}{
		{"worker", worker, []string{`"nodeName":"gpu008"`, `"nvidia.com/gpu":"8"`, `"-engine-hold","10m0s"`, `"automountServiceAccountToken":false`, `"allowPrivilegeEscalation":false`, `"runAsNonRoot":true`,
			`"gpuform.dev/launch":"2"`, `"gpuform.dev/role":"worker"`, `"operator":"Equal"`, `"priorityClassName":"system-node-critical"`, `"activeDeadlineSeconds":960`},
			[]string{`"privileged":true`, `"hostNetwork"`, `"secretName"`, `"-engine-node"`}},
		{"launcher", launcher, []string{`"nodeName":"gpu007"`, `"nvidia.com/gpu":"8"`, `"privileged":true`, `"hostNetwork":true`, `"dnsPolicy":"ClusterFirstWithHostNet"`,
			`"-engine-command","mpirun -np 16 -H gpu007:8,gpu008:8 all_reduce_perf -b 8M -e 8G -f 2 -g 1","-engine-timeout","9m0s"`,
			`"-engine-kube-report","gpuform-report-ab12cd34-l2"`, `"secretName":"gpuform-bundle-ab12cd34-l2"`, `"name":"gpuform-keys-ab12cd34-l2"`,
			`"gpuform.dev/role":"launcher"`, `{"emptyDir":{"medium":"Memory"},"name":"shm"}`, `"operator":"Equal"`},
			[]string{`"-host-root"`, `"hostPath"`}},
	} {
		for _, w := range c.want {
			if !strings.Contains(string(c.job), w) {
				t.Errorf("the %s Job lacks %s:\n%s", c.name, w, c.job)
			}
		}
		for _, w := range c.not {
			if strings.Contains(string(c.job), w) {
				t.Errorf("the %s Job has %s:\n%s", c.name, w, c.job)
			}
		}
		kc.Request(t, http.MethodPost, "/apis/batch/v1/namespaces/default/jobs?dryRun=All&fieldValidation=Strict", "application/json", string(c.job))
	}
}
