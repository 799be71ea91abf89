// Package kubetest runs a real Kubernetes API server for tests: etcd from
// Debian's etcd-server package and a kube-apiserver built from the Go
// module proxy (scripts/kube-apiserver.sh, through the tools module beside
// this file, cached under /var/cache/gpuform-test), each on its own
// loopback ports and data directory, so several test binaries can run
// their own at once. There is no kubelet, scheduler or controller
// manager: a test plays them by writing Pod, Job and Node status itself.
//
// The server authenticates with a static token file (Cluster.Token is an
// admin of group system:masters; Options.Users adds more) and authorizes
// with RBAC, so least-privilege manifests can be tried for real.
package kubetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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

// User is one more identity of the token file: requests with Token are
// Name, a member of Groups. A Name of "system:serviceaccount:NS:SA" is
// that service account to RBAC.
type User struct {
	Name   string
	Groups []string
	Token  string
}

// Options shape the server.
type Options struct {
	// Users are more token-file identities beside the admin.
	Users []User
}

// Cluster is a running API server.
type Cluster struct {
	// URL is the server's https address on 127.0.0.1.
	URL string
	// Token is a bearer token of an admin (group system:masters).
	Token string
	// CAFile is the PEM file that verifies the server's certificate.
	CAFile string
	// Dir holds etcd's data, the keys, the token file and the logs.
	Dir string
}

// Binary returns the path of the kube-apiserver, building it first when
// the cache has none (scripts/kube-apiserver.sh; minutes when cold).
func Binary(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("kubetest: cannot find this package's source directory")
	}
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "kube-apiserver.sh")
	var stderr bytes.Buffer
	cmd := exec.Command("sh", script)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubetest: %s: %v\n%s", script, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// Start runs etcd and a kube-apiserver for the test and stops them when
// it ends. It fails the test under CI, and skips it elsewhere, when
// etcd, openssl or flock is missing.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	for _, b := range []string{"etcd", "openssl", "flock"} {
		if _, err := exec.LookPath(b); err != nil {
			sshtest.Missing(t, "kubetest: "+b+" is not installed (apt-get install etcd-server openssl util-linux; scripts/test.sh does)")
		}
	}
	apiserver := Binary(t)
	dir, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c := &Cluster{Dir: dir, Token: randomToken(t)}

	etcdClient, etcdPeer := sshtest.FreePort(t), sshtest.FreePort(t)
	clientURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	start(t, dir, "etcd", "etcd",
		"--name=kubetest",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+clientURL,
		"--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=kubetest="+peerURL,
		"--log-level=warn",
	)

	key := filepath.Join(dir, "sa.key")
	pub := filepath.Join(dir, "sa.pub")
	for _, args := range [][]string{
		{"genrsa", "-out", key, "2048"},
		{"rsa", "-in", key, "-pubout", "-out", pub},
	} {
		if out, err := exec.Command("openssl", args...).CombinedOutput(); err != nil {
			t.Fatalf("kubetest: openssl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	var tokens strings.Builder
	fmt.Fprintf(&tokens, "%s,kubetest-admin,kubetest-admin,\"system:masters\"\n", c.Token)
	for i, u := range o.Users {
		fmt.Fprintf(&tokens, "%s,%s,kubetest-user-%d,\"%s\"\n", u.Token, u.Name, i, strings.Join(u.Groups, ","))
	}
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(tokens.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	port := sshtest.FreePort(t)
	certs := filepath.Join(dir, "certs")
	start(t, dir, "kube-apiserver", apiserver,
		"--etcd-servers="+clientURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--cert-dir="+certs,
		// The default reconciler writes the kubernetes Service's
		// endpoints, which refuses a loopback address.
		"--endpoint-reconciler-type=none",
		"--token-auth-file="+tokenFile,
		"--authorization-mode=RBAC",
		// As kubeadm and the managed clusters set it: privileged pods
		// (health mode's DaemonSet) are allowed.
		"--allow-privileged=true",
		"--service-account-key-file="+pub,
		"--service-account-signing-key-file="+key,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.0.0.0/24",
		// No controller manager creates each namespace's default
		// service account, which this admission plugin waits for.
		"--disable-admission-plugins=ServiceAccount",
	)
	c.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	c.CAFile = filepath.Join(certs, "apiserver.crt")
	c.waitReady(t)
	return c
}

// start runs name (a long-lived server) with its output in dir/name.log,
// printed when the test fails, and kills it when the test ends.
func start(t testing.TB, dir, name, bin string, args ...string) {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("kubetest: start %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				if len(b) > 8000 {
					b = b[len(b)-8000:]
				}
				t.Logf("kubetest: %s's log (end):\n%s", name, b)
			}
		}
	})
}

// waitReady polls /readyz until the server says it is ready (its
// bootstrap RBAC roles and priority classes written), a minute at most.
func (c *Cluster) waitReady(t testing.TB) {
	t.Helper()
	client := &http.Client{
		Timeout: 5 * time.Second,
		// Readiness only: the certificate may not be written yet when
		// polling starts; HTTPClient verifies it.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // readiness probe of the test's own loopback server
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var last string
	for ctx.Err() == nil {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+c.Token)
		resp, err := client.Do(req)
		if err == nil {
			var b bytes.Buffer
			_, _ = b.ReadFrom(http.MaxBytesReader(nil, resp.Body, 1<<16))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = fmt.Sprintf("%s: %s", resp.Status, b.String())
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("kubetest: kube-apiserver not ready at %s within 90s: %s", c.URL, last)
}

// Kubeconfig writes a kubeconfig for user's token (the admin's when
// token is "") to a file in the test's temporary directory and returns
// its path.
func (c *Cluster) Kubeconfig(t testing.TB, token string) string {
	t.Helper()
	if token == "" {
		token = c.Token
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubetest
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: kubetest
  user:
    token: %s
contexts:
- name: kubetest
  context:
    cluster: kubetest
    user: kubetest
current-context: kubetest
`, c.URL, c.CAFile, token)
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// randomToken returns a fresh bearer token.
func randomToken(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// Token returns a fresh bearer token for a User.
func Token(t testing.TB) string { return randomToken(t) }

// plural is the resource of each kind Create knows.
var plural = map[string]string{
	"Namespace": "namespaces", "Node": "nodes", "Pod": "pods", "ConfigMap": "configmaps", "ServiceAccount": "serviceaccounts",
	"ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings", "Role": "roles", "RoleBinding": "rolebindings",
	"Lease": "leases", "DaemonSet": "daemonsets", "Job": "jobs",
}

// clusterScoped are the kinds of plural without a namespace.
var clusterScoped = map[string]bool{"Namespace": true, "Node": true, "ClusterRole": true, "ClusterRoleBinding": true}

// Create creates the object obj (JSON) as the admin, failing the test
// when the server refuses it.
func (c *Cluster) Create(t testing.TB, obj string) {
	t.Helper()
	var o struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal([]byte(obj), &o); err != nil {
		t.Fatalf("kubetest: Create: %v", err)
	}
	res := plural[o.Kind]
	if res == "" {
		t.Fatalf("kubetest: Create: kind %q unknown", o.Kind)
	}
	path := "/apis/" + o.APIVersion
	if o.APIVersion == "v1" {
		path = "/api/v1"
	}
	if !clusterScoped[o.Kind] {
		path += "/namespaces/" + o.Metadata.Namespace
	}
	c.Request(t, http.MethodPost, path+"/"+res, "application/json", obj)
}

// MergePatch applies a JSON merge patch to the object at path as the
// admin.
func (c *Cluster) MergePatch(t testing.TB, path, patch string) {
	t.Helper()
	c.Request(t, http.MethodPatch, path, "application/merge-patch+json", patch)
}

// Request sends body to path as the admin and returns the answer,
// failing the test on a status that is not 2xx.
func (c *Cluster) Request(t testing.TB, method, path, contentType, body string) string {
	t.Helper()
	pem, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	req, err := http.NewRequest(method, c.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Content-Type", contentType)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("kubetest: %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode/100 != 2 {
		t.Fatalf("kubetest: %s %s: %s: %s", method, path, resp.Status, b)
	}
	return string(b)
}
