package kubetest

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestServer starts the real API server, writes a Node as the admin and
// reads it back over TLS verified by CAFile, and shows RBAC is on: a
// token-file user bound to no role is refused the same read.
func TestServer(t *testing.T) {
	t.Parallel()
	nobody := User{Name: "nobody", Token: Token(t)}
	c := Start(t, Options{Users: []User{nobody}})

	pem, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no certificate", c.CAFile)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	do := func(method, path, token, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, c.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, string(b)
	}

	if code, body := do(http.MethodPost, "/api/v1/nodes", c.Token, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"gpu001","labels":{"gpuform.dev/test":"yes"}}}`); code != http.StatusCreated {
		t.Fatalf("create node: %d %s", code, body)
	}
	code, body := do(http.MethodGet, "/api/v1/nodes/gpu001", c.Token, "")
	if code != http.StatusOK {
		t.Fatalf("get node: %d %s", code, body)
	}
	var node struct {
		Metadata struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.NewDecoder(bytes.NewReader([]byte(body))).Decode(&node); err != nil {
		t.Fatalf("node: %v\n%s", err, body)
	}
	if node.Metadata.Name != "gpu001" || node.Metadata.Labels["gpuform.dev/test"] != "yes" {
		t.Errorf("node read back = %+v, want gpu001 with its label", node.Metadata)
	}
	if code, body := do(http.MethodGet, "/api/v1/nodes/gpu001", nobody.Token, ""); code != http.StatusForbidden {
		t.Errorf("a user with no role read a node: %d %s (want 403: RBAC on)", code, body)
	}
	if code, _ := do(http.MethodGet, "/api/v1/nodes/gpu001", "not-a-token", ""); code != http.StatusUnauthorized {
		t.Errorf("an unknown token got %d, want 401", code)
	}
}
