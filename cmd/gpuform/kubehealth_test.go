package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/kubetest"
	"github.com/gpuform/gpuform/provision/kube"
)

// kubeNode reads node name through the admin's kubeconfig.
func kubeNode(t *testing.T, c *kube.Client, name string) *kube.Node {
	t.Helper()
	n, err := c.GetNode(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// gpuformTaint is gpuform's taint on n, nil without one.
func gpuformTaint(n *kube.Node) *kube.Taint {
	for i, tn := range n.Spec.Taints {
		if tn.Key == kube.TaintKey {
			return &n.Spec.Taints[i]
		}
	}
	return nil
}

// Health mode on Kubernetes against a real API server: a failing run
// cordons the node and adds gpuform's taint naming the check, with the
// whole reason in an annotation; a passing run lifts them, leaving an
// admin's taint; an admin's cordon survives gpuform's drain and lift.
// Shown to fail with Lift's cordon-annotation check removed (the admin's
// cordon was lifted).
func TestKubeHealthTaintAndLift(t *testing.T) {
	t.Parallel()
	kc := kubetest.Start(t, kubetest.Options{})
	admin := kc.Kubeconfig(t, "")
	cfg, err := kube.LoadKubeconfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kube.New(cfg, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range []string{
		`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"gpuform-system"}}`,
		`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"gpuform-breaker","namespace":"gpuform-system"}}`,
		`{"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu007"},"spec":{"taints":[{"key":"example.com/maintenance","value":"rack7","effect":"NoSchedule"}]}}`,
	} {
		kc.Create(t, obj)
	}
	specDir := healthSpec(t, `"gpu007"`, "  health {\n    max_drained_share = 1\n  }")
	state := filepath.Join(t.TempDir(), "health.json")
	run := func(args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(os.Args[0], append(append([]string{"gpuform-cli", "verify", "--local", "-kube-taint", "-kubeconfig", admin, "-mock-nvml", "dgxh100"}, args...), specDir)...)
		cmd.Env = []string{"NODE_NAME=gpu007", "GPUFORM_HEALTH_STATE=" + state, "PATH=" + os.Getenv("PATH")}
		return runHealth(t, cmd)
	}

	code, out, errOut := run("-mock-fault", "xid:4:79")
	n := kubeNode(t, cl, "gpu007")
	tn := gpuformTaint(n)
	if code != ExitReport || tn == nil || tn.Value != "nvml.xid" || tn.Effect != "NoSchedule" || !n.Spec.Unschedulable ||
		!strings.HasPrefix(n.Metadata.Annotations[kube.ReasonAnnotation], "gpuform: health: nvml.xid: reboot: fatal XID seen: XID 79") ||
		n.Metadata.Annotations[kube.CordonedAnnotation] != "true" || !strings.Contains(out, "Kubernetes: node gpu007 cordoned and tainted") {
		t.Fatalf("failing run: exit %d, node %+v %v\n%s%s", code, n.Spec, n.Metadata.Annotations, out, errOut)
	}
	// Still failing: the drain stands, with its first time.
	time.Sleep(time.Second)
	code, out, errOut = run("-mock-fault", "xid:4:79")
	n = kubeNode(t, cl, "gpu007")
	if again := gpuformTaint(n); code != ExitReport || again == nil || again.TimeAdded != tn.TimeAdded || !strings.Contains(out, "Kubernetes: node gpu007 stays drained") {
		t.Fatalf("second failing run: exit %d, taint %+v (first %+v)\n%s%s", code, again, tn, out, errOut)
	}
	code, out, errOut = run()
	n = kubeNode(t, cl, "gpu007")
	if code != ExitOK || gpuformTaint(n) != nil || n.Spec.Unschedulable || !hasTaintKey(n, "example.com/maintenance") ||
		!strings.Contains(out, "lifted gpuform's drain of node gpu007") {
		t.Fatalf("passing run: exit %d, node %+v %v\n%s%s", code, n.Spec, n.Metadata.Annotations, out, errOut)
	}

	// An admin's cordon: gpuform's drain adds its taint only, its lift
	// leaves the cordon.
	kc.MergePatch(t, "/api/v1/nodes/gpu007", `{"spec":{"unschedulable":true}}`)
	code, out, errOut = run("-mock-fault", "xid:4:79")
	if n = kubeNode(t, cl, "gpu007"); code != ExitReport || gpuformTaint(n) == nil || n.Metadata.Annotations[kube.CordonedAnnotation] != "" {
		t.Fatalf("failing run on an admin's cordon: exit %d, node %+v %v\n%s%s", code, n.Spec, n.Metadata.Annotations, out, errOut)
	}
	code, out, errOut = run()
	if n = kubeNode(t, cl, "gpu007"); code != ExitOK || gpuformTaint(n) != nil || !n.Spec.Unschedulable || !strings.Contains(out, "stays cordoned: the cordon is not gpuform's") {
		t.Fatalf("passing run on an admin's cordon: exit %d, node %+v\n%s%s", code, n.Spec, out, errOut)
	}

	// No NODE_NAME: a clear error, nothing touched.
	cmd := exec.Command(os.Args[0], "gpuform-cli", "verify", "--local", "-kube-taint", "-kubeconfig", admin, "-mock-nvml", "dgxh100", specDir)
	cmd.Env = []string{"GPUFORM_HEALTH_STATE=" + state}
	if code, _, errOut := runHealth(t, cmd); code != ExitFailed || !strings.Contains(errOut, "NODE_NAME is not set") {
		t.Errorf("without NODE_NAME: exit %d\n%s", code, errOut)
	}
}

// hasTaintKey reports whether n carries a taint of key.
func hasTaintKey(n *kube.Node, key string) bool {
	for _, tn := range n.Spec.Taints {
		if tn.Key == key {
			return true
		}
	}
	return false
}

// gpuform kubernetes manifests writes what the example ships (the
// objects themselves are validated by the API server in provision/kube's
// TestKubernetes), refuses to run without -image, and the -kube-taint
// flags refuse what they cannot mean.
func TestKubernetesManifestsAndFlags(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile(filepath.Join("..", "..", "examples", "kubernetes-health", "gpuform-health.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "", "kubernetes", "manifests", "-image", "ghcr.io/example/gpuform:0.1.0")
	if code != ExitOK || out != string(want) {
		t.Errorf("kubernetes manifests: exit %d, output differs from examples/kubernetes-health/gpuform-health.yaml (regenerate it)\n%s%s", code, out, errOut)
	}
	// -engine: verify -engine kubernetes's RBAC, as the example ships it
	// (validated by the API server in provision/kube's TestKubernetes and
	// used as the only rights in TestKubeEngine).
	want, err = os.ReadFile(filepath.Join("..", "..", "examples", "kubernetes-health", "gpuform-verify-rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, "", "kubernetes", "manifests", "-engine")
	if code != ExitOK || out != string(want) {
		t.Errorf("kubernetes manifests -engine: exit %d, output differs from examples/kubernetes-health/gpuform-verify-rbac.yaml (regenerate it)\n%s%s", code, out, errOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"kubernetes", "manifests", "-engine", "-image", "x"}, "-image is health mode's; -engine writes RBAC only"},
		{[]string{"kubernetes", "manifests"}, "-image is required"},
		{[]string{"kubernetes", "manifests", "-image", "x", "-interval", "1s"}, "-interval must be at least 10s"},
		{[]string{"verify", "-kube-taint"}, "-kube-taint works only with --local"},
		{[]string{"verify", "--local", "-kube-taint", "-slurm-drain"}, "different modes"},
		{[]string{"verify", "--local", "-kubeconfig", "x"}, "work only with -kube-taint"},
	} {
		code, _, errOut := runCLI(t, "", c.args...)
		if code != ExitFailed || !strings.Contains(errOut, c.want) {
			t.Errorf("gpuform %s: exit %d, want 1 and %q\n%s", strings.Join(c.args, " "), code, c.want, errOut)
		}
	}
}
