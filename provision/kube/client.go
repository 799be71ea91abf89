// Package kube is gpuform's Kubernetes API client for health mode on
// Kubernetes (verify --local -kube-taint): the few calls it makes — get
// and patch this node, get and update one coordination.k8s.io Lease — over
// the API's REST interface, with the credentials of a kubeconfig or of
// the pod it runs in, every response bounded in size and every call by
// its context. It drains (cordon and a gpuform.dev/unhealthy taint) and
// lifts only what gpuform made, behind a circuit breaker counted in the
// Lease with resourceVersion compare-and-swap (Drain, Lift).
//
// It is not client-go: these four calls do not need its ~30 modules and
// the minute of CPU their compilation adds to every cold build and CI run.
// It judges no check (provision/verify, provision/health do).
package kube

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpuform/gpuform/internal/readlimit"
)

// maxResponse bounds every response body read from the API server.
const maxResponse = 4 << 20

// Config is how to reach the API server.
type Config struct {
	// Server is the API server's https URL.
	Server string
	// Token is the bearer token.
	Token string
	// CA is the PEM of the certificate authorities to trust; none means
	// the system's.
	CA []byte
	// Insecure skips verifying the server's certificate (a kubeconfig's
	// insecure-skip-tls-verify).
	Insecure bool
	// Cert and Key are a client certificate and key (PEM), when the
	// kubeconfig's user has them.
	Cert, Key []byte
}

// In-cluster paths of the service account, as the kubelet mounts them.
const (
	saDir = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// InCluster is the pod's own service account (its token and CA under
// /var/run/secrets/kubernetes.io/serviceaccount, the server from
// KUBERNETES_SERVICE_HOST and _PORT in getenv).
func InCluster(getenv func(string) string) (Config, error) {
	host, port := getenv("KUBERNETES_SERVICE_HOST"), getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return Config{}, errors.New("not in a Kubernetes pod (no KUBERNETES_SERVICE_HOST/PORT): give -kubeconfig or KUBECONFIG")
	}
	token, err := readlimit.ReadFile(filepath.Join(saDir, "token"), 64<<10)
	if err != nil {
		return Config{}, fmt.Errorf("in-cluster service account token: %w", err)
	}
	ca, err := readlimit.ReadFile(filepath.Join(saDir, "ca.crt"), 1<<20)
	if err != nil {
		return Config{}, fmt.Errorf("in-cluster service account CA: %w", err)
	}
	return Config{Server: "https://" + net.JoinHostPort(host, port), Token: strings.TrimSpace(string(token)), CA: ca}, nil
}

// kubeconfig is the part of a kubeconfig file gpuform reads.
type kubeconfig struct {
	CurrentContext string `yaml:"current-context"`
	Clusters       []struct {
		Name    string `yaml:"name"`
		Cluster struct {
			Server                   string `yaml:"server"`
			CertificateAuthority     string `yaml:"certificate-authority"`
			CertificateAuthorityData string `yaml:"certificate-authority-data"`
			InsecureSkipTLSVerify    bool   `yaml:"insecure-skip-tls-verify"`
		} `yaml:"cluster"`
	} `yaml:"clusters"`
	Users []struct {
		Name string `yaml:"name"`
		User struct {
			Token                 string `yaml:"token"`
			TokenFile             string `yaml:"tokenFile"`
			ClientCertificate     string `yaml:"client-certificate"`
			ClientCertificateData string `yaml:"client-certificate-data"`
			ClientKey             string `yaml:"client-key"`
			ClientKeyData         string `yaml:"client-key-data"`
			Exec                  any    `yaml:"exec"`
			AuthProvider          *struct {
				Name string `yaml:"name"`
			} `yaml:"auth-provider"`
		} `yaml:"user"`
	} `yaml:"users"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster string `yaml:"cluster"`
			User    string `yaml:"user"`
		} `yaml:"context"`
	} `yaml:"contexts"`
}

// LoadKubeconfig reads a kubeconfig file's current context: its
// cluster's server and CA, its user's token or client certificate. Exec
// and auth-provider plugins are not run (nothing gpuform reads runs a
// program): such a user is an error naming the context.
func LoadKubeconfig(path string) (Config, error) {
	b, err := readlimit.ReadFile(path, 4<<20)
	if err != nil {
		return Config{}, fmt.Errorf("kubeconfig: %w", err)
	}
	var kc kubeconfig
	if err := yaml.Unmarshal(b, &kc); err != nil {
		return Config{}, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	data := func(inline, file, what string) ([]byte, error) {
		if inline != "" {
			d, err := base64.StdEncoding.DecodeString(inline)
			if err != nil {
				return nil, fmt.Errorf("kubeconfig %s: %s: %w", path, what, err)
			}
			return d, nil
		}
		if file == "" {
			return nil, nil
		}
		d, err := readlimit.ReadFile(rel(file), 1<<20)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %s: %w", path, what, err)
		}
		return d, nil
	}
	if kc.CurrentContext == "" {
		return Config{}, fmt.Errorf("kubeconfig %s: no current-context", path)
	}
	var cfg Config
	found := false
	for _, c := range kc.Contexts {
		if c.Name != kc.CurrentContext {
			continue
		}
		found = true
		clusterFound, userFound := false, false
		for _, cl := range kc.Clusters {
			if cl.Name != c.Context.Cluster {
				continue
			}
			clusterFound = true
			cfg.Server = cl.Cluster.Server
			cfg.Insecure = cl.Cluster.InsecureSkipTLSVerify
			if cfg.CA, err = data(cl.Cluster.CertificateAuthorityData, cl.Cluster.CertificateAuthority, "certificate-authority"); err != nil {
				return Config{}, err
			}
			if cfg.Insecure && len(cfg.CA) > 0 {
				// The CA would be ignored without a word (kubectl
				// refuses this too).
				return Config{}, fmt.Errorf("kubeconfig %s: cluster %q gives both a certificate authority and insecure-skip-tls-verify: drop one", path, cl.Name)
			}
		}
		for _, u := range kc.Users {
			if u.Name != c.Context.User {
				continue
			}
			userFound = true
			if u.User.Exec != nil {
				return Config{}, fmt.Errorf("kubeconfig %s: context %q's user %q authenticates with an exec plugin, which gpuform does not run: give a token or a client certificate", path, c.Name, u.Name)
			}
			if u.User.AuthProvider != nil {
				return Config{}, fmt.Errorf("kubeconfig %s: context %q's user %q authenticates with an auth-provider plugin (%s), which gpuform does not run: give a token or a client certificate", path, c.Name, u.Name, u.User.AuthProvider.Name)
			}
			cfg.Token = u.User.Token
			if cfg.Token == "" && u.User.TokenFile != "" {
				t, err := readlimit.ReadFile(rel(u.User.TokenFile), 64<<10)
				if err != nil {
					return Config{}, fmt.Errorf("kubeconfig %s: tokenFile: %w", path, err)
				}
				cfg.Token = strings.TrimSpace(string(t))
			}
			if cfg.Cert, err = data(u.User.ClientCertificateData, u.User.ClientCertificate, "client-certificate"); err != nil {
				return Config{}, err
			}
			if cfg.Key, err = data(u.User.ClientKeyData, u.User.ClientKey, "client-key"); err != nil {
				return Config{}, err
			}
		}
		if !clusterFound {
			return Config{}, fmt.Errorf("kubeconfig %s: context %q names cluster %q, which is not in clusters", path, c.Name, c.Context.Cluster)
		}
		if !userFound {
			return Config{}, fmt.Errorf("kubeconfig %s: context %q names user %q, which is not in users", path, c.Name, c.Context.User)
		}
		if strings.HasPrefix(cfg.Server, "http://") && (cfg.Token != "" || len(cfg.Cert) > 0) {
			// A bearer token over plain http crosses the network in
			// clear; the API server serves no plain port anyway.
			return Config{}, fmt.Errorf("kubeconfig %s: cluster %q's server %s is not https, and user %q has credentials that would travel in clear: use the https URL", path, c.Context.Cluster, cfg.Server, c.Context.User)
		}
	}
	if !found {
		return Config{}, fmt.Errorf("kubeconfig %s: current-context %q is not in contexts", path, kc.CurrentContext)
	}
	if !strings.HasPrefix(cfg.Server, "https://") && !strings.HasPrefix(cfg.Server, "http://") {
		return Config{}, fmt.Errorf("kubeconfig %s: cluster server %q is not an http(s) URL", path, cfg.Server)
	}
	return cfg, nil
}

// Client calls one API server.
type Client struct {
	cfg  Config
	http *http.Client
}

// New returns a client for cfg. Each call is bounded by its context;
// timeout bounds a call whose context has no deadline.
func New(cfg Config, timeout time.Duration) (*Client, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.Insecure} //nolint:gosec // only when the kubeconfig says insecure-skip-tls-verify
	if len(cfg.CA) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CA) {
			return nil, errors.New("kubernetes: the certificate authority holds no PEM certificate")
		}
		tc.RootCAs = pool
	}
	if len(cfg.Cert) > 0 {
		pair, err := tls.X509KeyPair(cfg.Cert, cfg.Key)
		if err != nil {
			return nil, fmt.Errorf("kubernetes: client certificate: %w", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return &Client{cfg: cfg, http: &http.Client{Timeout: timeout, Transport: &http.Transport{TLSClientConfig: tc, Proxy: http.ProxyFromEnvironment}}}, nil
}

// APIError is a call the API server refused or could not be asked.
type APIError struct {
	// Verb and Resource are what was asked ("patch", "nodes/gpu001").
	Verb, Resource string
	// Code is the HTTP status (0: no answer).
	Code int
	// Reason is the Status object's reason ("Forbidden", "Conflict").
	Reason string
	// Message is the server's message, or the transport's error.
	Message string
}

func (e *APIError) Error() string {
	switch e.Code {
	case 0:
		return fmt.Sprintf("kubernetes: %s %s: no answer from the API server: %s", e.Verb, e.Resource, e.Message)
	case http.StatusForbidden:
		return fmt.Sprintf("kubernetes: RBAC forbids %s on %s: %s (grant the service account verb %q on this resource)", e.Verb, e.Resource, e.Message, e.Verb)
	}
	return fmt.Sprintf("kubernetes: %s %s: %d %s: %s", e.Verb, e.Resource, e.Code, e.Reason, e.Message)
}

// IsConflict reports whether err is a resourceVersion conflict (409): the
// object changed since it was read.
func IsConflict(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.Code == http.StatusConflict
}

// IsNotFound reports whether err is a 404.
func IsNotFound(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.Code == http.StatusNotFound
}

// do sends one request and decodes a 2xx answer into out.
func (c *Client) do(ctx context.Context, verb, method, path, resource, contentType string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.cfg.Server, "/")+path, rd)
	if err != nil {
		return &APIError{Verb: verb, Resource: resource, Message: err.Error()}
	}
	if c.cfg.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return &APIError{Verb: verb, Resource: resource, Message: err.Error()}
	}
	defer resp.Body.Close()
	b, err := readlimit.ReadAll(resp.Body, "the API server's answer to "+verb+" "+resource, maxResponse)
	if err != nil {
		return &APIError{Verb: verb, Resource: resource, Code: resp.StatusCode, Message: err.Error()}
	}
	if resp.StatusCode/100 != 2 {
		var st struct {
			Reason  string `json:"reason"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(b, &st)
		if st.Message == "" {
			st.Message = strings.TrimSpace(string(b))
		}
		return &APIError{Verb: verb, Resource: resource, Code: resp.StatusCode, Reason: st.Reason, Message: st.Message}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return &APIError{Verb: verb, Resource: resource, Code: resp.StatusCode, Message: "undecodable answer: " + err.Error()}
		}
	}
	return nil
}

// ObjectMeta is the metadata gpuform reads and writes.
type ObjectMeta struct {
	Name            string            `json:"name"`
	Namespace       string            `json:"namespace,omitempty"`
	ResourceVersion string            `json:"resourceVersion,omitempty"`
	Annotations     map[string]string `json:"annotations,omitempty"`
	Labels          map[string]string `json:"labels,omitempty"`
}

// Taint is a Node's taint.
type Taint struct {
	Key       string `json:"key"`
	Value     string `json:"value,omitempty"`
	Effect    string `json:"effect"`
	TimeAdded string `json:"timeAdded,omitempty"`
}

// Node is the part of a Node object gpuform reads.
type Node struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     struct {
		Unschedulable bool    `json:"unschedulable,omitempty"`
		Taints        []Taint `json:"taints,omitempty"`
	} `json:"spec"`
}

// GetNode reads node name.
func (c *Client) GetNode(ctx context.Context, name string) (*Node, error) {
	var n Node
	err := c.do(ctx, "get", http.MethodGet, "/api/v1/nodes/"+name, "nodes/"+name, "", nil, &n)
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// nodePatch is a JSON merge patch of a Node. Its resourceVersion makes it
// a compare-and-swap: the server refuses it (409) when the node changed
// since it was read, so the taints list, which a merge patch replaces
// whole, never overwrites a taint added meanwhile.
type nodePatch struct {
	Metadata struct {
		ResourceVersion string             `json:"resourceVersion"`
		Annotations     map[string]*string `json:"annotations,omitempty"`
	} `json:"metadata"`
	Spec struct {
		Unschedulable bool    `json:"unschedulable"`
		Taints        []Taint `json:"taints"`
	} `json:"spec"`
}

// patchNode writes n's unschedulable, taints and the given annotations
// (nil value: remove) if the node is still at n's resourceVersion.
func (c *Client) patchNode(ctx context.Context, n *Node, annotations map[string]*string) error {
	var p nodePatch
	p.Metadata.ResourceVersion = n.Metadata.ResourceVersion
	p.Metadata.Annotations = annotations
	p.Spec.Unschedulable = n.Spec.Unschedulable
	p.Spec.Taints = n.Spec.Taints
	if p.Spec.Taints == nil {
		p.Spec.Taints = []Taint{}
	}
	name := n.Metadata.Name
	return c.do(ctx, "patch", http.MethodPatch, "/api/v1/nodes/"+name, "nodes/"+name, "application/merge-patch+json", p, nil)
}

// Lease is the part of a coordination.k8s.io/v1 Lease gpuform uses: its
// metadata (the annotation that lists gpuform's drains) for the
// compare-and-swap.
type Lease struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   ObjectMeta     `json:"metadata"`
	Spec       map[string]any `json:"spec,omitempty"`
}

func leasePath(ns, name string) string {
	return "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases/" + name
}

// GetLease reads the Lease ns/name.
func (c *Client) GetLease(ctx context.Context, ns, name string) (*Lease, error) {
	var l Lease
	if err := c.do(ctx, "get", http.MethodGet, leasePath(ns, name), "leases/"+name+" in namespace "+ns, "", nil, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// UpdateLease writes l if it is still at its resourceVersion (409
// otherwise: IsConflict).
func (c *Client) UpdateLease(ctx context.Context, l *Lease) error {
	ns, name := l.Metadata.Namespace, l.Metadata.Name
	return c.do(ctx, "update", http.MethodPut, leasePath(ns, name), "leases/"+name+" in namespace "+ns, "application/json", l, nil)
}

// KubeconfigFromEnv is the kubeconfig path: flag, else $KUBECONFIG's
// first entry; "" for in-cluster.
func KubeconfigFromEnv(flag string, getenv func(string) string) string {
	if flag != "" {
		return flag
	}
	if k := getenv("KUBECONFIG"); k != "" {
		return strings.Split(k, string(os.PathListSeparator))[0]
	}
	return ""
}
