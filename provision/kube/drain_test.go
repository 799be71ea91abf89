package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/internal/kubetest"
)

const testNS = "gpuform-system"

// testCluster is one real API server for the package's tests, with the
// breaker's namespace and Lease and the nodes names.
func testCluster(t *testing.T, o kubetest.Options, nodes ...string) (*Client, *kubetest.Cluster) {
	t.Helper()
	kc := kubetest.Start(t, o)
	cfg, err := LoadKubeconfig(kc.Kubeconfig(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	create(t, c, "/api/v1/namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": testNS}})
	create(t, c, "/apis/coordination.k8s.io/v1/namespaces/"+testNS+"/leases", map[string]any{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": map[string]any{"name": "gpuform-breaker"}})
	for _, n := range nodes {
		create(t, c, "/api/v1/nodes", map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": n}})
	}

	return c, kc
}

func create(t *testing.T, c *Client, path string, obj any) {
	t.Helper()
	if err := c.do(context.Background(), "create", http.MethodPost, path, path, "application/json", obj, nil); err != nil {
		t.Fatal(err)
	}
}

func breaker(fleet int) Breaker {
	return Breaker{Namespace: testNS, Lease: "gpuform-breaker", Fleet: fleet, MaxDrainedShare: 0.1}
}

// TestKubernetes runs the package's cases against one real API server.
func TestKubernetes(t *testing.T) {
	t.Parallel()
	var nodes []string
	for i := 1; i <= 20; i++ {
		nodes = append(nodes, fmt.Sprintf("gpu%03d", i))
	}
	nodes = append(nodes, "admin001", "plain001", "rbac001")
	// The DaemonSet's service account, as the token file's user: RBAC
	// judges it by this name and these groups.
	sa := kubetest.User{Name: "system:serviceaccount:" + testNS + ":" + ServiceAccount, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + testNS, "system:authenticated"}, Token: kubetest.Token(t)}
	c, kc := testCluster(t, kubetest.Options{Users: []kubetest.User{sa}}, nodes...)
	ctx := context.Background()

	// 20 nodes failing at the same instant through the Lease take at
	// most max_drained_share (0.1 of 20: 2); the others are held back
	// by the breaker, none drained. The API server itself refuses a Lease
	// update without a resourceVersion (422: shown by dropping it, every
	// drain then failed closed), so the count cannot be written blind.
	t.Run("breaker", func(t *testing.T) {
		fleet := nodes[:20]
		b := breaker(len(fleet))
		var wg sync.WaitGroup
		errs := make([]error, len(fleet))
		start := make(chan struct{})
		for i, n := range fleet {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, errs[i] = c.Drain(ctx, b, n, "gpu.xid", "gpu.xid: reset_gpu: Xid 79")
			}()
		}
		close(start)
		wg.Wait()
		var tainted, opened []string
		for i, n := range fleet {
			node, err := c.GetNode(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case errs[i] == nil:
				if !hasTaint(node) || !node.Spec.Unschedulable {
					t.Errorf("%s: Drain returned nil but node is not tainted and cordoned: %+v", n, node.Spec)
				}
				tainted = append(tainted, n)
			case IsBreakerOpen(errs[i]):
				if hasTaint(node) || node.Spec.Unschedulable {
					t.Errorf("%s: breaker open yet node drained: %+v", n, node.Spec)
				}
				opened = append(opened, n)
			default:
				t.Errorf("%s: %v", n, errs[i])
			}
		}
		if len(tainted) != 2 || len(opened) != 18 {
			t.Errorf("20 nodes failing at once: %d drained (%v), %d held back; want 2 and 18", len(tainted), tainted, len(opened))
		}
		l, err := c.GetLease(ctx, testNS, "gpuform-breaker")
		if err != nil {
			t.Fatal(err)
		}
		held, _ := drained(l)
		slices.Sort(held)
		if !slices.Equal(held, tainted) {
			t.Errorf("Lease lists %v, drained nodes are %v", held, tainted)
		}
		// A passing run of a drained node gives its place back: another
		// failing node may then drain.
		if _, err := c.Lift(ctx, b, tainted[0]); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Drain(ctx, b, opened[0], "gpu.xid", "x"); err != nil {
			t.Errorf("after one lift, a new drain: %v", err)
		}
		for _, n := range append(tainted, opened[0]) {
			if _, err := c.Lift(ctx, b, n); err != nil {
				t.Fatal(err)
			}
		}
	})

	// An admin's cordon and taint survive gpuform's drain and lift;
	// gpuform's own cordon is lifted.
	t.Run("admin", func(t *testing.T) {
		b := breaker(10) // limit 1: the Lease is empty after "breaker"
		n, err := c.GetNode(ctx, "admin001")
		if err != nil {
			t.Fatal(err)
		}
		n.Spec.Unschedulable = true
		n.Spec.Taints = []Taint{{Key: "example.com/maintenance", Value: "rack7", Effect: "NoExecute"}}
		if err := c.patchNode(ctx, n, nil); err != nil {
			t.Fatal(err)
		}
		res, err := c.Drain(ctx, b, "admin001", "gpu.ecc", "gpu.ecc: reset_gpu: uncorrectable")
		if err != nil {
			t.Fatal(err)
		}
		if res.Cordoned {
			t.Errorf("Drain of an admin-cordoned node claimed the cordon")
		}
		n, _ = c.GetNode(ctx, "admin001")
		if len(n.Spec.Taints) != 2 || n.Metadata.Annotations[ReasonAnnotation] != "gpu.ecc: reset_gpu: uncorrectable" {
			t.Errorf("after drain: taints %+v, annotations %v", n.Spec.Taints, n.Metadata.Annotations)
		}
		if _, err := c.Lift(ctx, b, "admin001"); err != nil {
			t.Fatal(err)
		}
		n, _ = c.GetNode(ctx, "admin001")
		if !n.Spec.Unschedulable {
			t.Errorf("a passing run uncordoned the admin's cordon")
		}
		if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "example.com/maintenance" {
			t.Errorf("after lift: taints %+v, want only the admin's", n.Spec.Taints)
		}

		// A node gpuform cordoned itself is uncordoned by a pass.
		res, err = c.Drain(ctx, b, "plain001", "gpu.ecc", "gpu.ecc: reset_gpu: x")
		if err != nil || !res.Cordoned {
			t.Fatalf("drain plain001: %+v %v", res, err)
		}
		n, _ = c.GetNode(ctx, "plain001")
		if !n.Spec.Unschedulable || taintValue(n) != "gpu.ecc" {
			t.Errorf("plain001 after drain: %+v", n.Spec)
		}
		lr, err := c.Lift(ctx, b, "plain001")
		if err != nil {
			t.Fatal(err)
		}
		n, _ = c.GetNode(ctx, "plain001")
		if n.Spec.Unschedulable || hasTaint(n) || !lr.Uncordoned || n.Metadata.Annotations[CordonedAnnotation] != "" {
			t.Errorf("plain001 after lift: %+v %v (%+v)", n.Spec, n.Metadata.Annotations, lr)
		}
	})

	// A repeat drain of a node that stands drained, whose node write
	// fails, keeps the node's place in the Lease: the node still carries
	// gpuform's taint, and a Lease that forgot it would let one drain more
	// through the breaker. Shown to fail with the place given back
	// whenever the node write fails (the Lease then lists nobody).
	t.Run("failed repeat drain keeps the place", func(t *testing.T) {
		b := breaker(10) // limit 1
		if _, err := c.Drain(ctx, b, "plain001", "gpu.ecc", "gpu.ecc: reset_gpu: x"); err != nil {
			t.Fatal(err)
		}
		fc := *c
		fc.http = &http.Client{Timeout: c.http.Timeout, Transport: refusePatch{c.http.Transport}}
		if _, err := fc.Drain(ctx, b, "plain001", "gpu.ecc", "gpu.ecc: reset_gpu: y"); err == nil {
			t.Fatal("drain with the node write refused: nil error")
		}
		l, err := c.GetLease(ctx, testNS, "gpuform-breaker")
		if err != nil {
			t.Fatal(err)
		}
		if held, _ := drained(l); !slices.Equal(held, []string{"plain001"}) {
			t.Errorf("Lease lists %v after a failed repeat drain; want [plain001] (its taint stands)", held)
		}
		if _, err := c.Drain(ctx, b, "gpu020", "gpu.ecc", "x"); !IsBreakerOpen(err) {
			t.Errorf("a second drain at limit 1: %v, want the breaker open", err)
			_, _ = c.Lift(ctx, b, "gpu020")
		}
		if _, err := c.Lift(ctx, b, "plain001"); err != nil {
			t.Fatal(err)
		}
	})

	// A node write whose answer is lost (the API server applied it, the
	// connection dropped before the answer) leaves a drain that stands:
	// its place in the Lease stays, or the breaker would count one drain
	// fewer than there are and let one more through.
	t.Run("lost answer keeps the place", func(t *testing.T) {
		b := breaker(10) // limit 1
		create(t, c, "/api/v1/nodes", map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "lost001"}})
		fc := *c
		fc.http = &http.Client{Timeout: c.http.Timeout, Transport: losePatchAnswer{c.http.Transport}}
		if _, err := fc.Drain(ctx, b, "lost001", "gpu.ecc", "gpu.ecc: reset_gpu: x"); err == nil {
			t.Fatal("drain with the node write's answer lost: nil error")
		}
		n, err := c.GetNode(ctx, "lost001")
		if err != nil {
			t.Fatal(err)
		}
		if !hasTaint(n) || !n.Spec.Unschedulable {
			t.Fatalf("the node write did not land: %+v", n.Spec)
		}
		l, err := c.GetLease(ctx, testNS, "gpuform-breaker")
		if err != nil {
			t.Fatal(err)
		}
		if held, _ := drained(l); !slices.Equal(held, []string{"lost001"}) {
			t.Errorf("Lease lists %v with lost001 drained; want [lost001]", held)
		}
		if _, err := c.Drain(ctx, b, "gpu020", "gpu.ecc", "x"); !IsBreakerOpen(err) {
			t.Errorf("a second drain at limit 1: %v, want the breaker open", err)
			_, _ = c.Lift(ctx, b, "gpu020")
		}
		if _, err := c.Lift(ctx, b, "lost001"); err != nil {
			t.Fatal(err)
		}
	})

	// An admin's taint added between gpuform's read of the node and its
	// write is kept: the write carries the resourceVersion read, the
	// real API server refuses it (409) and Drain reads again, rather
	// than a merge patch of the whole taints list dropping the admin's.
	t.Run("admin edit races the drain", func(t *testing.T) {
		b := breaker(10) // limit 1
		create(t, c, "/api/v1/nodes", map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "race001"}})
		fc := *c
		var once sync.Once
		fc.http = &http.Client{Timeout: c.http.Timeout, Transport: beforePatch{c.http.Transport, func() {
			once.Do(func() {
				kc.MergePatch(t, "/api/v1/nodes/race001", `{"spec":{"taints":[{"key":"example.com/admin","value":"hold","effect":"NoExecute"}]}}`)
			})
		}}}
		if _, err := fc.Drain(ctx, b, "race001", "gpu.ecc", "gpu.ecc: reset_gpu: x"); err != nil {
			t.Fatal(err)
		}
		n, err := c.GetNode(ctx, "race001")
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, tn := range n.Spec.Taints {
			keys = append(keys, tn.Key)
		}
		slices.Sort(keys)
		if diff := cmp.Diff([]string{"example.com/admin", TaintKey}, keys); diff != "" {
			t.Errorf("taints after a drain raced by an admin's edit (-want +got):\n%s", diff)
		}
		if _, err := c.Lift(ctx, b, "race001"); err != nil {
			t.Fatal(err)
		}
	})

	// Fail closed: with the Lease gone, no drain is made.
	t.Run("no lease", func(t *testing.T) {
		b := breaker(10)
		b.Lease = "missing"
		_, err := c.Drain(ctx, b, "rbac001", "gpu.ecc", "x")
		if err == nil || IsBreakerOpen(err) {
			t.Fatalf("drain without the Lease: %v, want an error", err)
		}
		n, _ := c.GetNode(ctx, "rbac001")
		if n.Spec.Unschedulable || hasTaint(n) {
			t.Errorf("drained without the breaker: %+v", n.Spec)
		}
	})

	// Every object of gpuform kubernetes manifests passes the real API
	// server's validation (server-side dry run: nothing created).
	t.Run("manifests dry run", func(t *testing.T) {
		objs, err := Manifests(ManifestOptions{Namespace: "gpuform-dryrun", Image: "registry.example.com/gpuform:1.0"})
		if err != nil {
			t.Fatal(err)
		}
		if objs[0]["kind"] != "Namespace" {
			t.Fatalf("first object is %v, want the Namespace", objs[0]["kind"])
		}
		// The namespace for real: the namespaced objects' dry run needs it.
		create(t, c, "/api/v1/namespaces", objs[0])
		for _, o := range objs[1:] {
			path := collection(t, o, "gpuform-dryrun") + "?dryRun=All&fieldValidation=Strict"
			if err := c.do(ctx, "create", http.MethodPost, path, path, "application/json", o, nil); err != nil {
				t.Errorf("%s %v: %v", o["kind"], o["metadata"], err)
			}
		}
		// Not created: a dry run.
		if _, err := c.GetLease(ctx, "gpuform-dryrun", BreakerLease); !IsNotFound(err) {
			t.Errorf("dry run created the Lease: %v", err)
		}
		// verify -engine kubernetes's RBAC (kubernetes manifests -engine),
		// in the same namespace.
		eng := EngineManifests("gpuform-dryrun")
		if diff := cmp.Diff(objs[0], eng[0]); diff != "" {
			t.Errorf("the engine's Namespace differs from health mode's, so applying both would fight over it (-health +engine):\n%s", diff)
		}
		for _, o := range eng[1:] {
			path := collection(t, o, "gpuform-dryrun") + "?dryRun=All&fieldValidation=Strict"
			if err := c.do(ctx, "create", http.MethodPost, path, path, "application/json", o, nil); err != nil {
				t.Errorf("engine %s %v: %v", o["kind"], o["metadata"], err)
			}
		}
	})

	// Health mode works with exactly the manifests' permissions, and a
	// verb they do not grant is refused with the verb and the resource
	// named. Shown to fail with "patch" left out of the ClusterRole.
	t.Run("least privilege", func(t *testing.T) {
		objs, err := Manifests(ManifestOptions{Namespace: testNS, Image: "x"})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			switch o["kind"] {
			case "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
				create(t, c, collection(t, o, testNS), o)
			}
		}
		cfg, err := LoadKubeconfig(kc.Kubeconfig(t, sa.Token))
		if err != nil {
			t.Fatal(err)
		}
		sc, _ := New(cfg, 10*time.Second)
		b := breaker(10)
		// RBAC takes effect within a moment of the bindings' creation.
		var derr error
		for range 50 {
			if _, derr = sc.Drain(ctx, b, "rbac001", "gpu.ecc", "gpu.ecc: reset_gpu: x"); derr == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if derr != nil {
			t.Fatalf("drain as the service account: %v", derr)
		}
		if _, err := sc.Lift(ctx, b, "rbac001"); err != nil {
			t.Fatalf("lift as the service account: %v", err)
		}
		_, err = sc.GetLease(ctx, testNS, "another-lease")
		if err == nil || !strings.Contains(err.Error(), "RBAC forbids get on leases/another-lease in namespace "+testNS) {
			t.Errorf("a Lease the Role does not name: %v", err)
		}
		err = sc.do(ctx, "delete", http.MethodDelete, "/api/v1/nodes/rbac001", "nodes/rbac001", "", nil, nil)
		if err == nil || !strings.Contains(err.Error(), "RBAC forbids delete on nodes/rbac001") {
			t.Errorf("delete node as the service account: %v", err)
		}
	})

	// An API server that does not answer is an error naming the call.
	t.Run("down", func(t *testing.T) {
		cfg, _ := LoadKubeconfig(kc.Kubeconfig(t, ""))
		cfg.Server = "https://127.0.0.1:1"
		dc, _ := New(cfg, 2*time.Second)
		_, err := dc.GetNode(ctx, "gpu001")
		if err == nil || !strings.Contains(err.Error(), "get nodes/gpu001: no answer") {
			t.Errorf("down server: %v", err)
		}
	})
}

// collection is the API path that creates o.
func collection(t *testing.T, o map[string]any, ns string) string {
	t.Helper()
	av, _ := o["apiVersion"].(string)
	kind, _ := o["kind"].(string)
	base := "/apis/" + av
	if av == "v1" {
		base = "/api/v1"
	}
	plural := map[string]string{"Namespace": "namespaces", "ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
		"Role": "roles", "RoleBinding": "rolebindings", "Lease": "leases", "DaemonSet": "daemonsets"}[kind]
	if plural == "" {
		t.Fatalf("no path for kind %q", kind)
	}
	switch kind {
	case "Namespace", "ClusterRole", "ClusterRoleBinding":
		return base + "/" + plural
	}
	return base + "/namespaces/" + ns + "/" + plural
}

// taintValue is the value of gpuform's taint on n, "" without one (the
// API server adds node.kubernetes.io/not-ready to a new Node itself).
func taintValue(n *Node) string {
	for _, t := range n.Spec.Taints {
		if t.Key == TaintKey {
			return t.Value
		}
	}
	return ""
}

// refusePatch is a transport that refuses every PATCH (a node write that
// fails: an API server timing out, a webhook refusing) and passes the
// rest to the real API server.
type refusePatch struct{ next http.RoundTripper }

func (r refusePatch) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPatch {
		return nil, errors.New("refused by the test")
	}
	return r.next.RoundTrip(req)
}

// losePatchAnswer is a transport that sends every PATCH to the real API
// server and then loses its answer (a connection dropped, a proxy timing
// out): the write landed, the client hears an error.
type losePatchAnswer struct{ next http.RoundTripper }

func (r losePatchAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if req.Method != http.MethodPatch || err != nil {
		return resp, err
	}
	_ = resp.Body.Close()
	return nil, errors.New("answer lost by the test")
}

// beforePatch is a transport that calls edit before it sends a PATCH (an
// admin's edit landing between gpuform's read and write).
type beforePatch struct {
	next http.RoundTripper
	edit func()
}

func (r beforePatch) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPatch {
		r.edit()
	}
	return r.next.RoundTrip(req)
}
