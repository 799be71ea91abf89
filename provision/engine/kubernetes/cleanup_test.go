package kubernetes

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/kubetest"
	engineslurm "github.com/gpuform/gpuform/provision/engine/slurm"
	"github.com/gpuform/gpuform/provision/kube"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/runner"
	"github.com/gpuform/gpuform/spec"
)

// hangingDeletes is a proxy in front of the real API server that passes
// every request but the deletes, which it holds unanswered until the
// client gives up (an API server that hangs on them, or a proxy that
// does). It counts the deletes it held.
func hangingDeletes(t *testing.T, kc *kubetest.Cluster) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	caPEM, err := os.ReadFile(kc.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	upstream, err := url.Parse(kc.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	proxy.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	var held atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodDelete {
			proxy.ServeHTTP(w, r)
			return
		}
		held.Add(1)
		// The body read whole, so the server notices the client
		// closing the connection.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	return srv, &held
}

// A run cut by its -deadline whose API server stops answering the
// deletes still ends within the deadline and CleanupGrace (it took up to
// 30 s more before), and its warning names each object it may have
// left behind and how they go away.
func TestKubeCleanupBoundedByDeadline(t *testing.T) {
	t.Parallel()
	kc := kubetest.Start(t, kubetest.Options{})
	kc.Create(t, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu001"}}`)
	srv, held := hangingDeletes(t, kc)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cl, err := kube.New(kube.Config{Server: srv.URL, Token: kc.Token, CA: certPEM}, callTimeout)
	if err != nil {
		t.Fatal(err)
	}
	node := &spec.Node{Name: "gpu", Verify: &spec.Verify{Kubernetes: &spec.VerifyKubernetes{Image: spec.Attr[string]{V: "registry.example.com/gpuform:test", Set: true}}}}
	targets := []target.Host{{Host: spec.Host{Name: "gpu001.example.com"}, Node: node}}
	var msgs strings.Builder
	// No kubelet plays the pod: the Job waits for one until the deadline.
	deadline := time.Now().Add(2 * time.Second)
	e := New(Options{Client: cl, Namespace: "default", Deadline: deadline, Poll: 100 * time.Millisecond, RunID: "hung", Messages: &msgs,
		Bundle: func(map[string]engineslurm.BundleNode) (*engineslurm.Bundle, error) {
			return &engineslurm.Bundle{}, nil
		}})
	doc, err := e.Verify(context.Background(), targets, runner.Options{Tier: verify.TierProbe})
	if err != nil {
		t.Fatal(err)
	}
	ended := time.Now()
	// Generous slack for a loaded machine, far below the 30 s of a
	// cleanup that waits out callTimeout.
	if late := ended.Sub(deadline); late > CleanupGrace+5*time.Second {
		t.Errorf("the run ended %s after its -deadline, want at most the %s grace (and a little slack)", late.Round(time.Millisecond), CleanupGrace)
	}
	if n := held.Load(); n != 3 {
		t.Errorf("%d deletes were asked, want 3 (jobs, configmaps and secrets, each asked though another hangs)", n)
	}
	if len(doc.Hosts) != 1 || len(doc.Hosts[0].Checks) != 1 || doc.Hosts[0].Checks[0].Status != verify.StatusNotRun {
		t.Errorf("the host the deadline cut: %+v", doc.Hosts)
	}
	for _, want := range []string{
		"Kubernetes: warning: run hung's objects were not all deleted (its cleanup ends by the -deadline and its 5s grace): kubernetes: deletecollection jobs in namespace default: no answer from the API server",
		"It may have left behind: Job gpuform-verify-hung-0 in namespace default, ConfigMap gpuform-report-hung-0 in namespace default, Secret gpuform-bundle-hung in namespace default, Secret gpuform-keys-hung in namespace default.",
		"Each carries the label gpuform.dev/run=hung; the Jobs' ttlSecondsAfterFinished (600 s) deletes them",
		"kubectl delete jobs,pods,configmaps,secrets -n default -l gpuform.dev/run=hung\n",
	} {
		if !strings.Contains(msgs.String(), want) {
			t.Errorf("the messages lack %q:\n%s", want, msgs.String())
		}
	}
	// They are indeed left, and carry what the warning says removes them.
	var jobs struct {
		Items []struct {
			Metadata kube.Meta `json:"metadata"`
			Spec     struct {
				TTL int `json:"ttlSecondsAfterFinished"`
			} `json:"spec"`
		} `json:"items"`
	}
	kcJSON(t, kc, "/apis/batch/v1/namespaces/default/jobs?labelSelector=gpuform.dev%2Frun%3Dhung", &jobs)
	if len(jobs.Items) != 1 || jobs.Items[0].Metadata.Name != "gpuform-verify-hung-0" || jobs.Items[0].Spec.TTL != ttlAfterFinished {
		t.Errorf("the Jobs left: %+v", jobs.Items)
	}
	var secrets struct {
		Items []struct {
			Metadata kube.Meta `json:"metadata"`
		} `json:"items"`
	}
	kcJSON(t, kc, "/api/v1/namespaces/default/secrets?labelSelector=gpuform.dev%2Frun%3Dhung", &secrets)
	if len(secrets.Items) != 2 {
		t.Errorf("%d Secrets left, want the bundle and the keys", len(secrets.Items))
	}
	for _, s := range secrets.Items {
		if len(s.Metadata.OwnerReferences) != 1 || s.Metadata.OwnerReferences[0].Name != "gpuform-verify-hung-0" {
			t.Errorf("Secret %s is not owned by the run's Job: %+v", s.Metadata.Name, s.Metadata.OwnerReferences)
		}
	}
}

func kcJSON(t *testing.T, kc *kubetest.Cluster, path string, out any) {
	t.Helper()
	if err := json.Unmarshal([]byte(kc.Request(t, http.MethodGet, path, "", "")), out); err != nil {
		t.Fatal(err)
	}
}
