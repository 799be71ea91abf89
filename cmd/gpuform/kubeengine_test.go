package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/internal/kubetest"
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/provision/connect"
	enginekube "github.com/gpuform/gpuform/provision/engine/kubernetes"
	engineslurm "github.com/gpuform/gpuform/provision/engine/slurm"
	enginessh "github.com/gpuform/gpuform/provision/engine/ssh"
	"github.com/gpuform/gpuform/provision/kube"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/report"
	"github.com/gpuform/gpuform/provision/verify/runner"
	"github.com/gpuform/gpuform/spec"
)

const kubeEngineNS = kube.DefaultNamespace

// kubeEngineSpec is examples/quickstart with hosts in place of its one
// simulated host and verify { kubernetes { image } }, in a directory of
// its own named as quickstart is (a spec is named after it).
func kubeEngineSpec(t *testing.T, hosts ...string) (string, *spec.Config) {
	t.Helper()
	return kubeEngineSpecWith(t, "", hosts...)
}

// kubeEngineSpecWith is kubeEngineSpec with more of verify { kubernetes }.
func kubeEngineSpecWith(t *testing.T, more string, hosts ...string) (string, *spec.Config) {
	t.Helper()
	b, err := os.ReadFile("../../examples/quickstart/main.gpuform.hcl")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), `hosts    = ["sim://hgx-h100-stale"]`, `hosts    = ["`+strings.Join(hosts, `", "`)+`"]`, 1)
	text = strings.Replace(text, "  verify {\n    nvml {", "  verify {\n    kubernetes {\n      image = \"registry.example.com/gpuform:test\"\n"+more+"    }\n    nvml {", 1)
	dir := filepath.Join(t.TempDir(), "quickstart")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), text)
	k, err := kb.Load()
	if err != nil {
		t.Fatal(err)
	}
	cfg, diags := spec.Load(dir, spec.LoadOptions{BuiltinModules: modules.FS(), GPUModels: k.GPUModelTable()})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return dir, cfg
}

// admin is the test's own plain client of the API server (the kubelet's
// and the job controller's part), usable from any goroutine.
type admin struct {
	url, token string
	http       *http.Client
}

func newAdmin(t *testing.T, kc *kubetest.Cluster) *admin {
	t.Helper()
	pem, err := os.ReadFile(kc.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &admin{url: kc.URL, token: kc.Token, http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}}
}

func (a *admin) call(method, path, contentType string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	req.Header.Set("Content-Type", contentType)
	resp, err := a.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// jobObject is the part of a Job the kubelet stand-in reads.
type jobObject struct {
	Metadata struct {
		Name   string            `json:"name"`
		UID    string            `json:"uid"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Template struct {
			Metadata map[string]any `json:"metadata"`
			Spec     map[string]any `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

// kubelet plays the job controller and the kubelet of the cluster's
// nodes, which the test API server has none of: for every Job of the
// namespace it creates the Job's pod, and, as the pod would, runs the
// container's command (this test binary standing in for gpuform, the
// bundle Secret's volume as a file) with the container's environment
// (its fieldRefs resolved as the downward API resolves them) and the
// node identity's credentials, then writes the pod's status as the
// kubelet does: the exit code and, the container failing, the end of
// its standard error as the termination message (FallbackToLogsOnError).
// A node in neverStart gets a pod that does not start instead: stuck in
// ErrImagePull ("no image") or still being created ("slow"); "NODE/worker"
// does that to the node's launch workers only, a Job's name to that Job;
// a worker Job's name marked "dies" has its pod fail as its launcher
// starts.
//
// For a launch (multinode.go) it checks what the engine promises before
// it runs the pod: a launcher only once every worker of its launch runs,
// on the host's network, privileged; a worker unprivileged and without
// the API's token. A worker holds until its Job is deleted, when the
// stand-in sends it SIGTERM as the kubelet does a deleted pod's.
//
// It plays the garbage collector too, which the test API server has
// none of (it is kube-controller-manager's): a pod whose Job is gone is
// deleted, once the stand-in has stopped its container. A Job's name
// marked "lingers" has a container slow to stop: its SIGTERM comes 2 s
// after its Job is deleted, the pod running until then; one marked
// "stays" has its pod stuck terminating (its node's kubelet gone): it
// never ends nor goes. What it saw, in order, is in events: "job NAME"
// when it first sees a Job, "ended POD" when a lingering pod ends.
type kubelet struct {
	t          *testing.T
	a          *admin
	kubeconfig map[string]string // each service account's credentials
	state      string            // GPUFORM_SIM_STATE
	path       string            // the containers' PATH
	neverStart map[string]string
	seen       map[string]bool
	live       map[string]bool // pods the stand-in still plays
	events     []string
	ran        atomic.Int64
	stop       chan struct{}
	done       sync.WaitGroup
	mu         sync.Mutex
	errs       []error
}

func startKubelet(t *testing.T, a *admin, kubeconfig map[string]string, state, path string, neverStart map[string]string) *kubelet {
	k := &kubelet{t: t, a: a, kubeconfig: kubeconfig, state: state, path: path, neverStart: neverStart, seen: map[string]bool{}, live: map[string]bool{}, stop: make(chan struct{})}
	k.done.Add(1)
	go k.loop()
	t.Cleanup(func() {
		close(k.stop)
		k.done.Wait()
		for _, err := range k.errs {
			t.Errorf("kubelet stand-in: %v", err)
		}
	})
	return k
}

func (k *kubelet) event(e string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.events = append(k.events, e)
}

// Events is what the stand-in saw, in order.
func (k *kubelet) Events() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.events)
}

func (k *kubelet) fail(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.errs = append(k.errs, err)
}

func (k *kubelet) loop() {
	defer k.done.Done()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-k.stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		var jobs struct {
			Items []jobObject `json:"items"`
		}
		if err := k.a.call(http.MethodGet, "/apis/batch/v1/namespaces/"+kubeEngineNS+"/jobs", "", nil, &jobs); err != nil {
			k.fail(err)
			return
		}
		jobUIDs := map[string]bool{}
		for _, j := range jobs.Items {
			jobUIDs[j.Metadata.UID] = true
			if k.seen[j.Metadata.UID] {
				continue
			}
			k.seen[j.Metadata.UID] = true
			k.event("job " + j.Metadata.Name)
			pod := j.Metadata.Name + "-pod"
			k.mu.Lock()
			k.live[pod] = true
			k.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					k.mu.Lock()
					delete(k.live, pod)
					k.mu.Unlock()
				}()
				if err := k.runPod(j); err != nil {
					k.fail(fmt.Errorf("job %s: %w", j.Metadata.Name, err))
				}
			}()
		}
		if err := k.collectGarbage(jobUIDs); err != nil {
			k.fail(err)
			return
		}
	}
}

// collectGarbage deletes the pods whose Job is not among jobUIDs, as the
// garbage collector does a deleted Job's (background propagation), once
// the stand-in no longer plays them (their container stopped); a pod
// whose Job is marked "stays" is left, stuck terminating.
func (k *kubelet) collectGarbage(jobUIDs map[string]bool) error {
	podPath := "/api/v1/namespaces/" + kubeEngineNS + "/pods"
	var pods struct {
		Items []struct {
			Metadata struct {
				Name   string            `json:"name"`
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := k.a.call(http.MethodGet, podPath, "", nil, &pods); err != nil {
		return err
	}
	for _, p := range pods.Items {
		k.mu.Lock()
		live := k.live[p.Metadata.Name]
		k.mu.Unlock()
		job := p.Metadata.Labels["batch.kubernetes.io/job-name"]
		if live || jobUIDs[p.Metadata.Labels["batch.kubernetes.io/controller-uid"]] || k.neverStart[job] == "stays" {
			continue
		}
		if err := k.a.call(http.MethodDelete, podPath+"/"+p.Metadata.Name+"?gracePeriodSeconds=0", "application/json", nil, nil); err != nil && !strings.Contains(err.Error(), "404 Not Found") {
			return err
		}
	}
	return nil
}

// runPod is the job controller's pod of j and the kubelet's run of it.
func (k *kubelet) runPod(j jobObject) error {
	tmpl := j.Spec.Template
	labels := map[string]any{"batch.kubernetes.io/controller-uid": j.Metadata.UID, "batch.kubernetes.io/job-name": j.Metadata.Name}
	if l, ok := tmpl.Metadata["labels"].(map[string]any); ok {
		for key, v := range l {
			labels[key] = v
		}
	}
	name := j.Metadata.Name + "-pod"
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name, "labels": labels}, "spec": tmpl.Spec}
	podPath := "/api/v1/namespaces/" + kubeEngineNS + "/pods"
	if err := k.a.call(http.MethodPost, podPath, "application/json", pod, nil); err != nil {
		return err
	}
	node, _ := tmpl.Spec["nodeName"].(string)
	role, _ := labels[enginekube.RoleLabel].(string)
	c := tmpl.Spec["containers"].([]any)[0].(map[string]any)
	volumes, _ := tmpl.Spec["volumes"].([]any)
	envs, _ := c["env"].([]any)
	status := func(phase string, state map[string]any) error {
		st := map[string]any{"status": map[string]any{"phase": phase, "containerStatuses": []any{map[string]any{
			"name": c["name"], "image": c["image"], "imageID": "", "ready": phase == "Running", "restartCount": 0, "state": state,
		}}}}
		return k.a.call(http.MethodPatch, podPath+"/"+name+"/status", "application/merge-patch+json", st, nil)
	}
	why := k.neverStart[node]
	if role == "worker" && k.neverStart[node+"/worker"] != "" {
		why = k.neverStart[node+"/worker"]
	}
	if w := k.neverStart[j.Metadata.Name]; w != "" {
		why = w
	}
	switch why {
	case "no image":
		return status("Pending", map[string]any{"waiting": map[string]any{"reason": "ErrImagePull", "message": `failed to pull image "registry.example.com/gpuform:test": not found`}})
	case "slow":
		return status("Pending", map[string]any{"waiting": map[string]any{"reason": "ContainerCreating"}})
	}
	// The bundle Secret's volume (created just after the Job: the
	// kubelet waits for it, as it waits to mount it).
	var secret struct {
		Data map[string][]byte `json:"data"`
	}
	secretName := ""
	for _, v := range volumes {
		if s, ok := v.(map[string]any)["secret"].(map[string]any); ok {
			secretName, _ = s["secretName"].(string)
		}
	}
	var err error
	for range 100 {
		if secretName == "" {
			break
		}
		if err = k.a.call(http.MethodGet, "/api/v1/namespaces/"+kubeEngineNS+"/secrets/"+secretName, "", nil, &secret); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "kubelet-volume")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for key, v := range secret.Data {
		if err := os.WriteFile(filepath.Join(dir, key), v, 0o400); err != nil {
			return err
		}
	}
	if role == "worker" {
		// A worker's container takes a moment to start (an image
		// pulled, the GPUs allocated): a launcher made before it
		// runs is caught by checkLaunch.
		time.Sleep(700 * time.Millisecond)
	}
	// A Job marked "quick" has its pod end before any look sees it run
	// (no Running status): a command that ends at once.
	if k.neverStart[j.Metadata.Name] != "quick" {
		if err := status("Running", map[string]any{"running": map[string]any{"startedAt": time.Now().UTC().Format(time.RFC3339)}}); err != nil {
			return err
		}
	}
	// A Job the stand-in refuses fails its pod too, so the run ends
	// (and the test with it) instead of waiting for the pod.
	refuse := func(err error) error {
		if serr := status("Failed", map[string]any{"terminated": map[string]any{"exitCode": 1, "reason": "Error", "message": err.Error()}}); serr != nil {
			return errors.Join(err, serr)
		}
		return err
	}
	// The node's root filesystem: a hostPath / volume, mounted
	// read-only, and -host-root naming where. The simulated node's / is
	// its simulated root, which its node side addresses as "/": the
	// mount path in the command becomes that.
	hostRoot := ""
	for _, v := range volumes {
		if hp, ok := v.(map[string]any)["hostPath"].(map[string]any); ok && hp["path"] == "/" {
			for _, m := range c["volumeMounts"].([]any) {
				m := m.(map[string]any)
				if m["name"] == v.(map[string]any)["name"] {
					if m["readOnly"] != true || m["recursiveReadOnly"] != "IfPossible" || m["mountPropagation"] != nil {
						return refuse(fmt.Errorf("the node's / is mounted %v, want read-only, recursively where possible, no propagation", m))
					}
					hostRoot, _ = m["mountPath"].(string)
				}
			}
		}
	}
	var args []string
	for i, a := range c["command"].([]any)[1:] {
		s := a.(string)
		if i > 0 && args[i-1] == "-host-root" {
			if s != hostRoot || s == "" {
				return refuse(fmt.Errorf("-host-root %s, but the node's / is mounted at %q", s, hostRoot))
			}
			s = "/"
		}
		args = append(args, strings.Replace(s, "/etc/gpuform/bundle", dir, 1))
	}
	if role == "" && !slices.Contains(args, "-host-root") {
		return refuse(fmt.Errorf("the Job's command %v reads no -host-root: the spec.* checks would judge the image", c["command"]))
	}
	if err := k.checkLaunch(j, role, tmpl.Spec, c); err != nil {
		return refuse(err)
	}
	sa, _ := tmpl.Spec["serviceAccountName"].(string)
	env := []string{"GPUFORM_SIM_STATE=" + k.state, "PATH=" + k.path}
	if tmpl.Spec["automountServiceAccountToken"] != false {
		env = append(env, "KUBECONFIG="+k.kubeconfig[sa])
	}
	for _, e := range envs {
		e := e.(map[string]any)
		v, _ := e["value"].(string)
		if from, ok := e["valueFrom"].(map[string]any); ok {
			if ref, ok := from["secretKeyRef"].(map[string]any); ok {
				// The kubelet waits for the Secret (the run creates
				// it after the Jobs), the container not created
				// meanwhile.
				var keys struct {
					Data map[string][]byte `json:"data"`
				}
				for range 100 {
					if err = k.a.call(http.MethodGet, "/api/v1/namespaces/"+kubeEngineNS+"/secrets/"+ref["name"].(string), "", nil, &keys); err == nil {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				if err != nil {
					return err
				}
				key, ok := keys.Data[ref["key"].(string)]
				if !ok {
					return fmt.Errorf("env %v: Secret %s has no key %s", e, ref["name"], ref["key"])
				}
				env = append(env, e["name"].(string)+"="+string(key))
				continue
			}
			switch from["fieldRef"].(map[string]any)["fieldPath"] {
			case "spec.nodeName":
				v = node
			case "metadata.namespace":
				v = kubeEngineNS
			case "metadata.labels['batch.kubernetes.io/controller-uid']":
				v = j.Metadata.UID
			default:
				return fmt.Errorf("env %v: a fieldRef the stand-in does not know", e)
			}
		}
		env = append(env, e["name"].(string)+"="+v)
	}
	cmd := exec.Command(os.Args[0], append([]string{"gpuform-cli"}, args...)...)
	cmd.Env, cmd.Dir = env, "/"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	// The Job deleted, its pod goes: SIGTERM, as the kubelet sends it.
	exited := make(chan struct{})
	go func() {
		for {
			select {
			case <-exited:
				return
			case <-time.After(200 * time.Millisecond):
			}
			if err := k.a.call(http.MethodGet, "/apis/batch/v1/namespaces/"+kubeEngineNS+"/jobs/"+j.Metadata.Name, "", nil, nil); err != nil && strings.Contains(err.Error(), "404 Not Found") {
				if k.neverStart[j.Metadata.Name] == "lingers" {
					// A container slow to stop: its pod runs on.
					time.Sleep(2 * time.Second)
				}
				_ = cmd.Process.Signal(syscall.SIGTERM)
				return
			}
		}
	}()
	runErr := cmd.Wait()
	close(exited)
	k.ran.Add(1)
	var ee *exec.ExitError
	switch k.neverStart[j.Metadata.Name] {
	case "vanishes":
		// Its pod was deleted (checkLaunch): no status to write.
		return nil
	case "stays":
		// Its node's kubelet gone: no status comes, the pod stays.
		return nil
	case "lingers":
		k.event("ended " + name)
	}
	switch {
	case runErr == nil:
		return status("Succeeded", map[string]any{"terminated": map[string]any{"exitCode": 0, "reason": "Completed"}})
	case errors.As(runErr, &ee):
		msg := stderr.String()
		if len(msg) > 2048 {
			msg = msg[len(msg)-2048:]
		}
		return status("Failed", map[string]any{"terminated": map[string]any{"exitCode": ee.ExitCode(), "reason": "Error", "message": msg}})
	}
	return runErr
}

// checkLaunch checks a launch's Job as the engine promises it: a
// launcher made only once every worker of its launch runs, on the
// host's network and privileged, pinned to its node; a worker
// unprivileged, without the API's token.
func (k *kubelet) checkLaunch(j jobObject, role string, pod, c map[string]any) error {
	sc, _ := c["securityContext"].(map[string]any)
	switch role {
	case "":
		return nil
	case "worker":
		if sc["privileged"] == true || pod["hostNetwork"] == true || pod["automountServiceAccountToken"] != false || sc["allowPrivilegeEscalation"] != false {
			return fmt.Errorf("a launch worker must be unprivileged, off the host's network, without the API's token: %v, %v", pod, sc)
		}
		return nil
	case "launcher":
	default:
		return fmt.Errorf("unknown launch role %q", role)
	}
	if sc["privileged"] != true || pod["hostNetwork"] != true || pod["dnsPolicy"] != "ClusterFirstWithHostNet" {
		return fmt.Errorf("a launcher must be privileged on the host's network (dnsPolicy ClusterFirstWithHostNet): %v, %v", pod, sc)
	}
	sel := enginekube.RunLabel + "=" + j.Metadata.Labels[enginekube.RunLabel] + "," + enginekube.LaunchLabel + "=" + j.Metadata.Labels[enginekube.LaunchLabel] + "," + enginekube.RoleLabel + "=worker"
	var jobs, pods struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Status struct {
				Phase string `json:"phase"`
			} `json:"status"`
		} `json:"items"`
	}
	q := "?labelSelector=" + url.QueryEscape(sel)
	if err := k.a.call(http.MethodGet, "/apis/batch/v1/namespaces/"+kubeEngineNS+"/jobs"+q, "", nil, &jobs); err != nil {
		return err
	}
	if err := k.a.call(http.MethodGet, "/api/v1/namespaces/"+kubeEngineNS+"/pods"+q, "", nil, &pods); err != nil {
		return err
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase == "Running" {
			running++
		}
	}
	if running != len(jobs.Items) || len(pods.Items) != len(jobs.Items) {
		return fmt.Errorf("the launcher was made with %d of its launch's %d workers running", running, len(jobs.Items))
	}
	// A worker marked "dies" is killed as its launcher starts (the
	// kernel's OOM killer, an eviction): its pod fails while the test
	// runs.
	for _, w := range jobs.Items {
		if k.neverStart[w.Metadata.Name] == "vanishes" {
			// Deleted outright, as a preemption, a forced delete or
			// the pod GC of a lost node does it: no last status.
			if err := k.a.call(http.MethodDelete, "/api/v1/namespaces/"+kubeEngineNS+"/pods/"+w.Metadata.Name+"-pod?gracePeriodSeconds=0", "application/json", nil, nil); err != nil {
				return err
			}
			continue
		}
		if k.neverStart[w.Metadata.Name] != "dies" {
			continue
		}
		st := map[string]any{"status": map[string]any{"phase": "Failed", "containerStatuses": []any{map[string]any{
			"name": "hold", "image": c["image"], "imageID": "", "ready": false, "restartCount": 0,
			"state": map[string]any{"terminated": map[string]any{"exitCode": 137, "reason": "OOMKilled"}},
		}}}}
		if err := k.a.call(http.MethodPatch, "/api/v1/namespaces/"+kubeEngineNS+"/pods/"+w.Metadata.Name+"-pod/status", "application/merge-patch+json", st, nil); err != nil {
			return err
		}
	}
	return nil
}

// runLeft lists what of run is left in the namespace.
func runLeft(t *testing.T, a *admin, run string) []string {
	t.Helper()
	var left []string
	for _, res := range []string{"apis/batch/v1/namespaces/" + kubeEngineNS + "/jobs", "api/v1/namespaces/" + kubeEngineNS + "/configmaps", "api/v1/namespaces/" + kubeEngineNS + "/secrets"} {
		var l struct {
			Items []struct {
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			} `json:"items"`
		}
		if err := a.call(http.MethodGet, "/"+res+"?labelSelector="+enginekube.RunLabel+"%3D"+run, "", nil, &l); err != nil {
			t.Fatal(err)
		}
		for _, i := range l.Items {
			left = append(left, i.Metadata.Name)
		}
	}
	return left
}

// kubeFleetSpec is a spec of one node group of simulated HGX H100 on
// hosts, with one multi-node nccl_test and verify { kubernetes { image } }.
func kubeFleetSpec(t *testing.T, k *kb.KB, hosts ...string) (string, *spec.Config) {
	t.Helper()
	return kubeFleetSpecCommand(t, k, "mpirun -np 32 all_reduce_perf -b 8M -e 8G -f 2 -g 1", hosts...)
}

// kubeFleetSpecCommand is kubeFleetSpec with the nccl_test's command
// (an HCL string's contents).
func kubeFleetSpecCommand(t *testing.T, k *kb.KB, command string, hosts ...string) (string, *spec.Config) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fleet")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `module "hgx" {
  source = "gpuform/hgx-h100-8gpu"
}

node "train" {
  hosts    = ["`+strings.Join(hosts, `", "`)+`"]
  hardware = module.hgx.hardware
  verify {
    optional = ["dcgm"]
    kubernetes {
      image = "registry.example.com/gpuform:test"
    }
    nccl_test "fleet" {
      command        = "`+command+`"
      min_busbw_gbps = 120
    }
  }
}
`)
	cfg, diags := spec.Load(dir, spec.LoadOptions{BuiltinModules: modules.FS(), GPUModels: k.GPUModelTable()})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return dir, cfg
}

// isolationPairs is a report's isolation pairs, as they ran.
func isolationPairs(d *report.Document) []string {
	var out []string
	for _, iso := range d.Isolation {
		for _, p := range iso.Pairs {
			out = append(out, fmt.Sprintf("round %d %s+%s ran=%v pass=%v", p.Round, p.Hosts[0], p.Hosts[1], p.Ran, p.Pass))
		}
	}
	return out
}

// simNodes makes a Node, labelled pool, for each sim:// host, named as
// its last path element.
func simNodes(t *testing.T, kc *kubetest.Cluster, pool string, hosts []string) {
	t.Helper()
	for _, h := range hosts {
		kc.Create(t, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"`+h[strings.LastIndex(h, "/")+1:]+`","labels":{"pool":"`+pool+`"}}}`)
	}
}

// eachGroupCheck calls check with each host's check id of got, and
// fails a host that has none.
func eachGroupCheck(t *testing.T, got *report.Document, hosts []string, id string, check func(host string, c verify.CheckResult)) {
	t.Helper()
	checks := hostChecks(got)
	for _, h := range hosts {
		found := false
		for _, c := range checks[h] {
			if c.ID == id {
				found = true
				check(h, c)
			}
		}
		if !found {
			t.Errorf("%s has no %s check", h, id)
		}
	}
}

// hostChecks is a report's checks per host.
func hostChecks(doc *report.Document) map[string][]verify.CheckResult {
	out := map[string][]verify.CheckResult{}
	for _, h := range doc.Hosts {
		out[h.Host] = h.Checks
	}
	return out
}

// TestKubeEngine runs verify -engine kubernetes against a real API server
// with exactly the RBAC of gpuform kubernetes manifests -engine, the test
// playing the job controller and the kubelets (it runs each Job's command
// as its pod would, against a simulated node).
func TestKubeEngine(t *testing.T) {
	t.Parallel()
	saUser := func(name string) kubetest.User {
		return kubetest.User{Name: "system:serviceaccount:" + kubeEngineNS + ":" + name, Groups: []string{"system:serviceaccounts", "system:authenticated"}, Token: kubetest.Token(t)}
	}
	ctl, node, nojobs, nowrite := saUser(kube.EngineController), saUser(kube.EngineNode), saUser("gpuform-verify-nojobs"), saUser("gpuform-verify-nowrite")
	kc := kubetest.Start(t, kubetest.Options{Users: []kubetest.User{ctl, node, nojobs, nowrite}})
	a := newAdmin(t, kc)
	for _, o := range kube.EngineManifests(kubeEngineNS) {
		kc.Create(t, mustJSON(t, o))
	}
	// An identity that may list nodes but create no Job.
	kc.Create(t, `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"nojobs"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"gpuform-verify"},"subjects":[{"kind":"ServiceAccount","name":"gpuform-verify-nojobs","namespace":"`+kubeEngineNS+`"}]}`)
	for n, pool := range map[string]string{"gpu011": "a", "gpu012": "b", "gpu013": "a", "gpu014": "c"} {
		kc.Create(t, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"`+n+`","labels":{"pool":"`+pool+`"}}}`)
	}
	state := t.TempDir()
	// The kubelet mounts the token of the pod's service account:
	// gpuform-verify-nowrite has no RBAC at all.
	neverStart := map[string]string{"gpu013": "no image", "gpu014": "slow", "gpu033/worker": "no image"}
	// The runs "nopairs"'s and "cutpairs"'s launches after their
	// group's (0): their isolation pairs' launchers.
	for i := 1; i <= 20; i++ {
		neverStart[fmt.Sprintf("gpuform-launch-nopairs-%d", i)] = "slow"
		neverStart[fmt.Sprintf("gpuform-launch-cutpairs-%d", i)] = "slow"
	}
	// The run "workerdies"'s group launch loses its second worker; the
	// run "workergone"'s has its second worker's pod deleted outright.
	neverStart["gpuform-launch-workerdies-0-w1"] = "dies"
	neverStart["gpuform-launch-workergone-0-w1"] = "vanishes"
	// The run "linger"'s group launch has a worker slow to stop once
	// deleted; the run "stays"'s, one whose pod never ends.
	neverStart["gpuform-launch-linger-0-w0"] = "lingers"
	neverStart["gpuform-launch-stays-0-w0"] = "stays"
	// The run "quick"'s group launcher ends before it is seen running.
	neverStart["gpuform-launch-quick-0"] = "quick"
	// The image's programs: the system's, but a nohup(1) that runs its
	// command only where GPUFORM_REPORT_KEY is not in its environment (a
	// wrapper the runner looks past to give mpirun its host list).
	bin := t.TempDir()
	writeFile(t, filepath.Join(bin, "nohup"), "#!/bin/sh\nif env | grep -q '^"+enginekube.EnvReportKey+"='; then echo 'nohup: the report key is in the environment' >&2; exit 3; fi\nexec \"$@\"\n")
	if err := os.Chmod(filepath.Join(bin, "nohup"), 0o755); err != nil {
		t.Fatal(err)
	}
	kl := startKubelet(t, a, map[string]string{kube.EngineNode: kc.Kubeconfig(t, node.Token), "gpuform-verify-nowrite": kc.Kubeconfig(t, nowrite.Token)}, state, bin+string(os.PathListSeparator)+os.Getenv("PATH"), neverStart)
	k, err := kb.Load()
	if err != nil {
		t.Fatal(err)
	}
	client := func(token string) *kube.Client {
		cfg, err := kube.LoadKubeconfig(kc.Kubeconfig(t, token))
		if err != nil {
			t.Fatal(err)
		}
		c, err := kube.New(cfg, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// RBAC takes effect a moment after the bindings are created.
	for range 50 {
		if _, err = client(ctl.Token).NodeNames(context.Background(), ""); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	engineAt := func(t *testing.T, tier verify.Tier, token, dir string, cfg *spec.Config, o enginekube.Options) (*enginekube.Engine, runner.Options, *atomic.Int64) {
		o.Client, o.Namespace, o.Poll = client(token), kubeEngineNS, 100*time.Millisecond
		o.Bundle = func(nodes map[string]engineslurm.BundleNode) (*engineslurm.Bundle, error) {
			return engineslurm.NewBundle(cfg, dir, nil, tier, false, nodes)
		}
		var connects atomic.Int64
		ro := runner.Options{Tier: tier, KB: k, Target: target.Options{Connect: func(context.Context, spec.Host) (transport.Transport, error) {
			connects.Add(1)
			return nil, errors.New("the kubernetes engine must not connect to hosts")
		}}}
		return enginekube.New(o), ro, &connects
	}
	engine := func(t *testing.T, token, dir string, cfg *spec.Config, o enginekube.Options) (*enginekube.Engine, runner.Options, *atomic.Int64) {
		return engineAt(t, verify.TierProbe, token, dir, cfg, o)
	}
	targets := func(t *testing.T, cfg *spec.Config) []target.Host {
		hosts, diags := target.Select(cfg, nil)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		return hosts
	}
	hosts := []string{"sim://hgx-h100-converged/gpu011", "sim://hgx-h100-degraded/gpu012"}
	dir, cfg := kubeEngineSpec(t, hosts...)
	// The SSH engine's report of the same simulated nodes: the one the
	// kubernetes engine must equal, check for check.
	want, err := enginessh.Engine{}.Verify(context.Background(), targets(t, cfg), runner.Options{Tier: verify.TierProbe, KB: k, Target: target.Options{Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
		return connect.Open(ctx, h, connect.Options{SimStateDir: state})
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if want.Summary.Failed == 0 || want.Summary.Passed == 0 {
		t.Fatalf("the reference run should pass some checks and fail others (a degraded node): %+v", want.Summary)
	}

	t.Run("parity with ssh, and a host that is no node", func(t *testing.T) {
		dir, cfg := kubeEngineSpec(t, append(hosts, "sim://hgx-h100-converged/gpu099")...)
		var msgs strings.Builder
		e, ro, connects := engine(t, ctl.Token, dir, cfg, enginekube.Options{Messages: &msgs, RunID: "parity"})
		got, err := e.Verify(context.Background(), targets(t, cfg), ro)
		if err != nil {
			t.Fatal(err)
		}
		if n := connects.Load(); n != 0 {
			t.Errorf("the kubernetes engine connected to hosts %d time(s)", n)
		}
		gc := hostChecks(got)
		bad := gc["sim://hgx-h100-converged/gpu099"]
		delete(gc, "sim://hgx-h100-converged/gpu099")
		if diff := cmp.Diff(hostChecks(want), gc); diff != "" {
			t.Errorf("-engine kubernetes differs from -engine ssh (-ssh +kubernetes):\n%s", diff)
		}
		if len(bad) != 1 || bad[0].ID != string(verify.CheckReachable) || bad[0].Status != verify.StatusFail || !strings.Contains(bad[0].Message, "the cluster has no node gpu099") {
			t.Errorf("the host that is no node: %+v", bad)
		}
		if got.Summary.Hosts != 3 {
			t.Errorf("report holds %d hosts, want 3", got.Summary.Hosts)
		}
		if left := runLeft(t, a, "parity"); len(left) != 0 {
			t.Errorf("the run left %v behind", left)
		}
		if !strings.Contains(msgs.String(), "Kubernetes: run parity: a Job per node") {
			t.Errorf("messages do not name the run:\n%s", msgs.String())
		}
	})

	t.Run("the CLI: gpuform verify -engine kubernetes -format json", func(t *testing.T) {
		code, out, errOut := runCLIEnv(t, []string{"GPUFORM_SIM_STATE=" + state}, "verify", "-engine", "kubernetes", "-format", "json", "-kubeconfig", kc.Kubeconfig(t, ctl.Token), "-namespace", kubeEngineNS, dir)
		if code != ExitReport {
			t.Fatalf("exit %d, want 2 (a degraded node fails)\n%s", code, errOut)
		}
		var doc report.Document
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if diff := cmp.Diff(hostChecks(want), hostChecks(&doc)); diff != "" {
			t.Errorf("gpuform verify -engine kubernetes differs from -engine ssh (-ssh +cli):\n%s", diff)
		}
	})

	t.Run("a Job that never starts, and -selector", func(t *testing.T) {
		dir, cfg := kubeEngineSpec(t, "sim://hgx-h100-converged/gpu011", "sim://hgx-h100-degraded/gpu012", "sim://hgx-h100-converged/gpu013")
		var msgs strings.Builder
		// The pod's start timeout (-kube-start-timeout) gives up on it
		// within the -deadline; the rest of the run goes on.
		e, ro, _ := engine(t, ctl.Token, dir, cfg, enginekube.Options{Messages: &msgs, StartTimeout: 2 * time.Second, Deadline: time.Now().Add(time.Minute), Selector: "pool=a", RunID: "nostart"})
		got, err := e.Verify(context.Background(), targets(t, cfg), ro)
		if err != nil {
			t.Fatal(err)
		}
		gc := hostChecks(got)
		if diff := cmp.Diff(hostChecks(want)[hosts[0]], gc[hosts[0]]); diff != "" {
			t.Errorf("gpu011 (-want +got):\n%s", diff)
		}
		c := gc["sim://hgx-h100-converged/gpu013"]
		if len(c) != 1 || c[0].Status != verify.StatusFail || !strings.Contains(c[0].Message, "Kubernetes node gpu013: Job gpuform-verify-nostart-1's pod did not start within 2s: pod gpuform-verify-nostart-1-pod is pending: ErrImagePull: failed to pull image") {
			t.Errorf("the node whose pod never starts: %+v", c)
		}
		if got.OK() {
			t.Error("a run with a node that never started passed")
		}
		// gpu012 is outside the selector: left out, not failed, and said.
		if _, in := gc["sim://hgx-h100-degraded/gpu012"]; in || got.Summary.Hosts != 2 || !strings.Contains(msgs.String(), "gpu012 are outside -selector pool=a") {
			t.Errorf("the host outside -selector: report holds %d hosts\n%s", got.Summary.Hosts, msgs.String())
		}
		if left := runLeft(t, a, "nostart"); len(left) != 0 {
			t.Errorf("the run left %v behind", left)
		}
	})

	// The -deadline ends the run while a pod is still being created: its
	// host is not run (and needed), not failed and never passed.
	t.Run("the -deadline cuts a pod that is slow to start", func(t *testing.T) {
		dir, cfg := kubeEngineSpec(t, "sim://hgx-h100-converged/gpu014")
		e, ro, _ := engine(t, ctl.Token, dir, cfg, enginekube.Options{Deadline: time.Now().Add(1500 * time.Millisecond), RunID: "cut"})
		got, err := e.Verify(context.Background(), targets(t, cfg), ro)
		if err != nil {
			t.Fatal(err)
		}
		c := hostChecks(got)["sim://hgx-h100-converged/gpu014"]
		if len(c) != 1 || c[0].Status != verify.StatusNotRun || !c[0].Needed || !strings.Contains(c[0].Message, "the -deadline ended before Kubernetes node gpu014's checks finished (Job gpuform-verify-cut-0: pod gpuform-verify-cut-0-pod is pending: ContainerCreating)") {
			t.Errorf("the node the deadline cut: %+v", c)
		}
		if got.OK() {
			t.Error("a run the deadline cut passed")
		}
	})

	// The node side cannot write its report: its pod fails, and the end
	// of its standard error, the termination message, names why.
	t.Run("RBAC forbids the node its report", func(t *testing.T) {
		dir, cfg := kubeEngineSpecWith(t, "      service_account = \"gpuform-verify-nowrite\"\n", hosts[0])
		e, ro, _ := engine(t, ctl.Token, dir, cfg, enginekube.Options{RunID: "nowrite"})
		got, err := e.Verify(context.Background(), targets(t, cfg), ro)
		if err != nil {
			t.Fatal(err)
		}
		c := hostChecks(got)[hosts[0]]
		if len(c) != 1 || c[0].Status != verify.StatusFail || !strings.Contains(c[0].Message, "Kubernetes node gpu011 (Job gpuform-verify-nowrite-0): it wrote no report ConfigMap (pod gpuform-verify-nowrite-0-pod is failed: exit 1: Error: ") ||
			!strings.Contains(c[0].Message, "RBAC forbids create on configmaps in namespace "+kubeEngineNS) {
			t.Errorf("the node that could not write its report: %+v", c)
		}
	})

	t.Run("RBAC forbids create on jobs", func(t *testing.T) {
		e, ro, _ := engine(t, nojobs.Token, dir, cfg, enginekube.Options{})
		got, err := e.Verify(context.Background(), targets(t, cfg), ro)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range got.Hosts {
			if len(h.Checks) != 1 || h.Checks[0].Status != verify.StatusFail || !strings.Contains(h.Checks[0].Message, "RBAC forbids create on jobs in namespace "+kubeEngineNS) {
				t.Errorf("%s: %+v", h.Host, h.Checks)
			}
		}
	})

	// The fleet tier: the group's multi-node test and the isolation
	// of its failing run, each a launch (a worker Job holding each
	// peer's GPUs, then a launcher Job running the command from the
	// group's first node), equal -engine ssh's check for check and pair
	// for pair, with no SSH connection made.
	t.Run("fleet tier: the multi-node test and its isolation as launches", func(t *testing.T) {
		hosts := []string{"sim://hgx-h100-converged/gpu021", "sim://hgx-h100-converged/gpu022", "sim://hgx-h100-slownic/gpu023", "sim://hgx-h100-converged/gpu024"}
		simNodes(t, kc, "fleet", hosts)
		dir, cfg := kubeFleetSpec(t, k, hosts...)
		want, err := enginessh.Engine{}.Verify(context.Background(), targets(t, cfg), runner.Options{Tier: verify.TierFleet, KB: k, AllowLocal: true, Target: target.Options{Connect: func(ctx context.Context, h spec.Host) (transport.Transport, error) {
			return connect.Open(ctx, h, connect.Options{SimStateDir: state})
		}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(want.Isolation) != 1 || len(want.Isolation[0].Culprits) != 1 || want.Isolation[0].Culprits[0].Host != hosts[2] {
			t.Fatalf("the SSH engine's isolation should name gpu023: %+v", want.Isolation)
		}
		var msgs strings.Builder
		e, ro, connects := engineAt(t, verify.TierFleet, ctl.Token, dir, cfg, enginekube.Options{Messages: &msgs, RunID: "fleet"})
		got, err := e.Verify(context.Background(), targets(t, cfg), ro)
		if err != nil {
			t.Fatal(err)
		}
		if n := connects.Load(); n != 0 {
			t.Errorf("the kubernetes engine connected to hosts %d time(s)", n)
		}
		if diff := cmp.Diff(hostChecks(want), hostChecks(got)); diff != "" {
			t.Errorf("-engine kubernetes -tier fleet differs from -engine ssh (-ssh +kubernetes):\n%s", diff)
		}
		if diff := cmp.Diff(isolationPairs(want), isolationPairs(got)); diff != "" {
			t.Errorf("isolation pairs (-ssh +kubernetes):\n%s", diff)
		}
		if len(isolationPairs(got)) == 0 {
			t.Error("no isolation pair ran")
		}
		if left := runLeft(t, a, "fleet"); len(left) != 0 {
			t.Errorf("the run left %v behind", left)
		}
		if !strings.Contains(msgs.String(), "Kubernetes: run fleet: the fleet tier's multi-node tests and isolation pairs as launches") {
			t.Errorf("messages do not say the launches:\n%s", msgs.String())
		}
		if strings.Contains(msgs.String(), "not all deleted") {
			t.Errorf("a launch was not cleaned up:\n%s", msgs.String())
		}
	})

	// The group's launch ends with a worker pod slow to stop (its GPUs
	// held until it does): the isolation pairs' launches, which may
	// want that node's GPUs, are made only once it has ended.
	t.Run("fleet tier: the next launches wait for the last one's pods to end", func(t *testing.T) {
		hosts := []string{"sim://hgx-h100-converged/gpu081", "sim://hgx-h100-converged/gpu082", "sim://hgx-h100-slownic/gpu083", "sim://hgx-h100-converged/gpu084"}
		simNodes(t, kc, "linger", hosts)
		dir, cfg := kubeFleetSpec(t, k, hosts...)
		var msgs strings.Builder
		e, ro, _ := engineAt(t, verify.TierFleet, ctl.Token, dir, cfg, enginekube.Options{Messages: &msgs, RunID: "linger"})
		got, err := e.Verify(context.Background(), targets(t, cfg), ro)
		if err != nil {
			t.Fatal(err)
		}
		if len(isolationPairs(got)) == 0 {
			t.Fatalf("no isolation pair ran: %+v", got.Isolation)
		}
		ended, later := -1, 0
		for i, ev := range kl.Events() {
			switch {
			case ev == "ended gpuform-launch-linger-0-w0-pod":
				ended = i
			case strings.HasPrefix(ev, "job gpuform-launch-linger-") && !strings.HasPrefix(ev, "job gpuform-launch-linger-0"):
				later++
				if ended < 0 {
					t.Errorf("%s was made while the group launch's worker pod gpuform-launch-linger-0-w0-pod had not ended", strings.TrimPrefix(ev, "job "))
				}
			}
		}
		if ended < 0 || later == 0 {
			t.Errorf("the lingering pod ended at event %d, %d later launch Jobs: want both", ended, later)
		}
		if strings.Contains(msgs.String(), "had not ended") {
			t.Errorf("a launch's pods were reported not ended:\n%s", msgs.String())
		}
		if left := runLeft(t, a, "linger"); len(left) != 0 {
			t.Errorf("the run left %v behind", left)
		}
	})

	// A launch's worker pod never goes (stuck terminating, its node's
	// kubelet gone): the launch's end waits for it no longer than the
	// start timeout, then the run goes on and says so; the launch's
	// result stands.
	t.Run("fleet tier: a launch's pod that never ends", func(t *testing.T) {
		hosts := []string{"sim://hgx-h100-converged/gpu091", "sim://hgx-h100-converged/gpu092", "sim://hgx-h100-converged/gpu093", "sim://hgx-h100-converged/gpu094"}
		simNodes(t, kc, "stays", hosts)
		dir, cfg := kubeFleetSpec(t, k, hosts...)
		var msgs strings.Builder
		e, ro, _ := engineAt(t, verify.TierFleet, ctl.Token, dir, cfg, enginekube.Options{Messages: &msgs, StartTimeout: 3 * time.Second, RunID: "stays"})
		started := time.Now()
		got, err := e.Verify(context.Background(), targets(t, cfg), ro)
		if err != nil {
			t.Fatal(err)
		}
		// Generous for a loaded machine: an unbounded wait never ends.
		if took := time.Since(started); took > time.Minute {
			t.Errorf("the run took %s", took.Round(time.Second))
		}
		want := "Kubernetes: warning: run stays's launch 0: its pod(s) gpuform-launch-stays-0-w0-pod had not ended within the start timeout (3s) after its Jobs were deleted; the next launches on those nodes may find their GPUs still held"
		if !strings.Contains(msgs.String(), want) {
			t.Errorf("the messages lack %q:\n%s", want, msgs.String())
		}
		group := verify.CheckNCCL.Named("fleet")
		eachGroupCheck(t, got, hosts, group, func(h string, c verify.CheckResult) {
			if c.Status != verify.StatusPass {
				t.Errorf("%s: the group's test, which ran, is %s: %s", h, c.Status, c.Message)
			}
		})
	})

	// The launcher's node side reads its report key from the pod's
	// environment; the command it launches must not see it (it could
	// sign a report of its own): here a command that fails where it
	// does (the stand-in's nohup), so the group's test passes only
	// without it.
	t.Run("fleet tier: the launched command does not see the report key", func(t *testing.T) {
		hosts := []string{"sim://hgx-h100-converged/gpu101", "sim://hgx-h100-converged/gpu102", "sim://hgx-h100-converged/gpu103", "sim://hgx-h100-converged/gpu104"}
		simNodes(t, kc, "nokey", hosts)
		dir, cfg := kubeFleetSpecCommand(t, k, "nohup mpirun -np 32 all_reduce_perf -b 8M -e 8G -f 2 -g 1", hosts...)
		e, ro, _ := engineAt(t, verify.TierFleet, ctl.Token, dir, cfg, enginekube.Options{RunID: "nokey"})
		got, err := e.Verify(context.Background(), targets(t, cfg), ro)
		if err != nil {
			t.Fatal(err)
		}
		group := verify.CheckNCCL.Named("fleet")
		eachGroupCheck(t, got, hosts, group, func(h string, c verify.CheckResult) {
			if c.Status != verify.StatusPass {
				t.Errorf("%s: the group's test is %s: %s", h, c.Status, c.Message)
			}
		})
	})

	// The launcher's pod ends before the engine sees it run (its
	// command over at once): it ran, and its result is taken, where it
	// was "ended before the test ran", not run.
	t.Run("fleet tier: a launcher that ends before it is seen running", func(t *testing.T) {
		hosts := []string{"sim://hgx-h100-converged/gpu111", "sim://hgx-h100-converged/gpu112", "sim://hgx-h100-converged/gpu113", "sim://hgx-h100-converged/gpu114"}
		simNodes(t, kc, "quick", hosts)
		dir, cfg := kubeFleetSpec(t, k, hosts...)
		e, ro, _ := engineAt(t, verify.TierFleet, ctl.Token, dir, cfg, enginekube.Options{RunID: "quick"})
		got, err := e.Verify(context.Background(), targets(t, cfg), ro)
		if err != nil {
			t.Fatal(err)
		}
		group := verify.CheckNCCL.Named("fleet")
		eachGroupCheck(t, got, hosts, group, func(h string, c verify.CheckResult) {
			if c.Status != verify.StatusPass {
				t.Errorf("%s: the group's test is %s: %s", h, c.Status, c.Message)
			}
		})
	})

	// A worker that never starts: the group's test is not run (needed)
	// on every host, with the reason naming the node, never failed nor
	// passed; the hosts' own checks are still reported, and nothing is
	// isolated on a run that never happened.
	t.Run("fleet tier: a launch worker that never starts", func(t *testing.T) {
		hosts := []string{"sim://hgx-h100-converged/gpu031", "sim://hgx-h100-converged/gpu032", "sim://hgx-h100-converged/gpu033", "sim://hgx-h100-converged/gpu034"}
		simNodes(t, kc, "noworker", hosts)
		dir, cfg := kubeFleetSpec(t, k, hosts...)
		e, ro, _ := engineAt(t, verify.TierFleet, ctl.Token, dir, cfg, enginekube.Options{StartTimeout: 3 * time.Second, RunID: "noworker"})
		got, err := e.Verify(context.Background(), targets(t, cfg), ro)
		if err != nil {
			t.Fatal(err)
		}
		if got.OK() {
			t.Error("a run whose multi-node test was not run passed")
		}
		if len(got.Isolation) != 0 {
			t.Errorf("a run that never happened was isolated: %+v", got.Isolation)
		}
		group := verify.CheckNCCL.Named("fleet")
		for _, h := range hosts {
			cs := hostChecks(got)[h]
			if len(cs) < 2 {
				t.Errorf("%s: its own checks are not reported: %+v", h, cs)
				continue
			}
			found := false
			for _, c := range cs {
				if c.ID != group {
					continue
				}
				found = true
				if c.Status != verify.StatusNotRun || !c.Needed || !strings.Contains(c.Message, "the engine did not run the group's test: Kubernetes node gpu033: the launch's worker pod did not start within 3s: pod gpuform-launch-noworker-0-w1-pod is pending: ErrImagePull") {
					t.Errorf("%s: %+v", h, c)
				}
			}
			if !found {
				t.Errorf("%s has no %s check: %+v", h, group, cs)
			}
		}
		if left := runLeft(t, a, "noworker"); len(left) != 0 {
			t.Errorf("the run left %v behind", left)
		}
	})

	// The group's run fails (a slow NIC) and none of its isolation
	// pairs' launchers starts: no pair ran, none is passed, no node is
	// named, and every host's isolation check says so (an error, needed,
	// as when the pairs cannot tell), never a pass.
	t.Run("fleet tier: isolation pairs that cannot be launched", func(t *testing.T) {
		hosts := []string{"sim://hgx-h100-converged/gpu041", "sim://hgx-h100-converged/gpu042", "sim://hgx-h100-slownic/gpu043", "sim://hgx-h100-converged/gpu044"}
		simNodes(t, kc, "nopairs", hosts)
		dir, cfg := kubeFleetSpec(t, k, hosts...)
		e, ro, _ := engineAt(t, verify.TierFleet, ctl.Token, dir, cfg, enginekube.Options{StartTimeout: 2 * time.Second, RunID: "nopairs"})
		got, err := e.Verify(context.Background(), targets(t, cfg), ro)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Isolation) != 1 || len(got.Isolation[0].Pairs) == 0 || len(got.Isolation[0].Culprits) != 0 {
			t.Fatalf("the isolation: %+v", got.Isolation)
		}
		for _, p := range got.Isolation[0].Pairs {
			if p.Ran || p.Pass || !strings.Contains(p.Message, "the launch's launcher pod did not start within 2s") {
				t.Errorf("a pair whose launcher never started: %+v", p)
			}
		}
		group, iso := verify.CheckNCCL.Named("fleet"), verify.CheckIsolation.Named("fleet")
		for _, h := range hosts {
			seen := 0
			for _, c := range hostChecks(got)[h] {
				switch c.ID {
				case group:
					seen++
					if c.Status != verify.StatusFail {
						t.Errorf("%s: the group's run below its floor is %s: %s", h, c.Status, c.Message)
					}
				case iso:
					seen++
					if c.Status != verify.StatusError || !strings.Contains(c.Message, "isolation incomplete") {
						t.Errorf("%s: the isolation no pair of which ran is %s: %s", h, c.Status, c.Message)
					}
				}
			}
			if seen != 2 {
				t.Errorf("%s: %d of its group and isolation checks", h, seen)
			}
		}
		if left := runLeft(t, a, "nopairs"); len(left) != 0 {
			t.Errorf("the run left %v behind", left)
		}
	})

	// A worker's pod fails while the group's test runs: the node's GPUs
	// were not held, so the result is not taken: not run, naming the
	// node, never failed nor passed, and nothing isolated.
	t.Run("fleet tier: a launch worker that dies while the test runs", func(t *testing.T) {
		hosts := []string{"sim://hgx-h100-converged/gpu061", "sim://hgx-h100-converged/gpu062", "sim://hgx-h100-converged/gpu063", "sim://hgx-h100-converged/gpu064"}
		simNodes(t, kc, "workerdies", hosts)
		dir, cfg := kubeFleetSpec(t, k, hosts...)
		e, ro, _ := engineAt(t, verify.TierFleet, ctl.Token, dir, cfg, enginekube.Options{RunID: "workerdies"})
		got, err := e.Verify(context.Background(), targets(t, cfg), ro)
		if err != nil {
			t.Fatal(err)
		}
		if got.OK() || len(got.Isolation) != 0 {
			t.Errorf("ok %v, isolation %+v; want a run not passed, nothing isolated", got.OK(), got.Isolation)
		}
		group := verify.CheckNCCL.Named("fleet")
		eachGroupCheck(t, got, hosts, group, func(h string, c verify.CheckResult) {
			if c.Status != verify.StatusNotRun || !c.Needed || !strings.Contains(c.Message, "Kubernetes node gpu063: the launch's worker pod gpuform-launch-workerdies-0-w1-pod ended while the test ran: pod gpuform-launch-workerdies-0-w1-pod is failed: exit 137: OOMKilled; its result is not taken") {
				t.Errorf("%s: %+v", h, c)
			}
		})
		if left := runLeft(t, a, "workerdies"); len(left) != 0 {
			t.Errorf("the run left %v behind", left)
		}
	})

	// A worker's pod is deleted outright while the group's test runs
	// (preempted, force-deleted, its node gone): no pod says it ended,
	// but the node's GPUs were not held, so the result is not taken
	// either: not run, naming the node, never passed.
	t.Run("fleet tier: a launch worker whose pod is deleted while the test runs", func(t *testing.T) {
		hosts := []string{"sim://hgx-h100-converged/gpu071", "sim://hgx-h100-converged/gpu072", "sim://hgx-h100-converged/gpu073", "sim://hgx-h100-converged/gpu074"}
		simNodes(t, kc, "workergone", hosts)
		dir, cfg := kubeFleetSpec(t, k, hosts...)
		e, ro, _ := engineAt(t, verify.TierFleet, ctl.Token, dir, cfg, enginekube.Options{RunID: "workergone"})
		got, err := e.Verify(context.Background(), targets(t, cfg), ro)
		if err != nil {
			t.Fatal(err)
		}
		if got.OK() || len(got.Isolation) != 0 {
			t.Errorf("ok %v, isolation %+v; want a run not passed, nothing isolated", got.OK(), got.Isolation)
		}
		group := verify.CheckNCCL.Named("fleet")
		// The API server deletes a pod in two writes even at grace 0
		// (the deletion timestamp, then the object), so a list can see
		// it going as well as gone: either names the worker and its node.
		gone := "Kubernetes node gpu073: the launch's worker Job gpuform-launch-workergone-0-w1 has no pod running any more while the test ran"
		going := "Kubernetes node gpu073: the launch's worker pod gpuform-launch-workergone-0-w1-pod was being deleted while the test ran"
		eachGroupCheck(t, got, hosts, group, func(h string, c verify.CheckResult) {
			if c.Status != verify.StatusNotRun || !c.Needed || !strings.Contains(c.Message, gone) && !strings.Contains(c.Message, going) || !strings.Contains(c.Message, "its result is not taken") {
				t.Errorf("%s: %+v", h, c)
			}
		})
		if left := runLeft(t, a, "workergone"); len(left) != 0 {
			t.Errorf("the run left %v behind", left)
		}
	})

	// The -deadline comes while the isolation pairs' launchers wait to
	// start: the nodes' own checks and the group's run are reported, the
	// isolation is not run (needed), never passed, and the run ends
	// soon after its deadline with nothing left behind.
	t.Run("fleet tier: the -deadline cuts the isolation's launches", func(t *testing.T) {
		hosts := []string{"sim://hgx-h100-converged/gpu051", "sim://hgx-h100-converged/gpu052", "sim://hgx-h100-slownic/gpu053", "sim://hgx-h100-converged/gpu054"}
		simNodes(t, kc, "cutpairs", hosts)
		dir, cfg := kubeFleetSpec(t, k, hosts...)
		// Long enough for the nodes' own Jobs and the group's run (a
		// few seconds here), which the pairs' launchers then outwait.
		deadline := time.Now().Add(30 * time.Second)
		e, ro, _ := engineAt(t, verify.TierFleet, ctl.Token, dir, cfg, enginekube.Options{Deadline: deadline, RunID: "cutpairs"})
		got, err := e.Verify(context.Background(), targets(t, cfg), ro)
		if err != nil {
			t.Fatal(err)
		}
		if over := time.Since(deadline); over > 15*time.Second {
			t.Errorf("the run ended %s after its deadline", over)
		}
		if got.OK() {
			t.Error("a run the deadline cut passed")
		}
		if len(got.Isolation) != 1 || !strings.HasPrefix(got.Isolation[0].Incomplete, "the run's -deadline ended it") || len(got.Isolation[0].Culprits) != 0 {
			t.Errorf("the isolation the deadline cut: %+v", got.Isolation)
		}
		for _, p := range isolationPairs(got) {
			if strings.Contains(p, "ran=true") || strings.Contains(p, "pass=true") {
				t.Errorf("a pair the deadline cut: %s", p)
			}
		}
		group, iso := verify.CheckNCCL.Named("fleet"), verify.CheckIsolation.Named("fleet")
		for _, h := range hosts {
			seen := 0
			for _, c := range hostChecks(got)[h] {
				switch c.ID {
				case group:
					seen++
					if c.Status != verify.StatusFail {
						t.Errorf("%s: the group's run, finished below its floor before the deadline, is %s: %s", h, c.Status, c.Message)
					}
				case iso:
					seen++
					if c.Status != verify.StatusNotRun || !c.Needed {
						t.Errorf("%s: the isolation the deadline cut is %s (needed %v): %s", h, c.Status, c.Needed, c.Message)
					}
				}
			}
			if seen != 2 {
				t.Errorf("%s: %d of its group and isolation checks", h, seen)
			}
		}
		if left := runLeft(t, a, "cutpairs"); len(left) != 0 {
			t.Errorf("the run left %v behind", left)
		}
	})

	t.Run("the API server down", func(t *testing.T) {
		cfg2, _ := kube.LoadKubeconfig(kc.Kubeconfig(t, ctl.Token))
		cfg2.Server = "https://127.0.0.1:1"
		down, _ := kube.New(cfg2, 2*time.Second)
		_, ro, _ := engine(t, ctl.Token, dir, cfg, enginekube.Options{})
		e := enginekube.New(enginekube.Options{Client: down, Namespace: kubeEngineNS, Bundle: func(map[string]engineslurm.BundleNode) (*engineslurm.Bundle, error) {
			return nil, errors.New("not reached")
		}})
		got, err := e.Verify(context.Background(), targets(t, cfg), ro)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range got.Hosts {
			if len(h.Checks) != 1 || h.Checks[0].Status != verify.StatusFail || !strings.Contains(h.Checks[0].Message, "list nodes: no answer from the API server") {
				t.Errorf("%s: %+v", h.Host, h.Checks)
			}
		}
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A kubeconfig with insecure-skip-tls-verify still makes a client (an
// operator may need it), but never silently: standard error says the
// server's certificate is not verified.
func TestKubeClientWarnsInsecure(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "config")
	kc := "apiVersion: v1\nkind: Config\ncurrent-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n" +
		"clusters:\n- name: k\n  cluster:\n    server: https://k.example:6443\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: t0ken\n"
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	if _, err := kubeClient(Streams{Err: &errb}, p); err != nil {
		t.Fatal(err)
	}
	want := "gpuform: warning: the kubeconfig says insecure-skip-tls-verify: the API server https://k.example:6443's certificate is not verified, so anyone on the path can read this run's credentials and answers.\n"
	if diff := cmp.Diff(want, errb.String()); diff != "" {
		t.Errorf("standard error (-want +got):\n%s", diff)
	}
}
