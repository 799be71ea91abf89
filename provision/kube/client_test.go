package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A kubeconfig whose user runs a program to authenticate, or that would
// send credentials unprotected, is an error naming what is wrong and
// never a client that quietly does less: an auth-provider user is
// refused like an exec one (not sent anonymous), a CA given with
// insecure-skip-tls-verify is refused as kubectl refuses it (the CA
// would be ignored silently), and a token or client certificate over
// http:// is refused (it would cross the network in clear).
func TestLoadKubeconfigRefuses(t *testing.T) {
	t.Parallel()
	const ca = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUIKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
	kubeconfig := func(server, cluster, user string) string {
		return "apiVersion: v1\nkind: Config\ncurrent-context: c\n" +
			"contexts:\n- name: c\n  context: {cluster: k, user: u}\n" +
			"clusters:\n- name: k\n  cluster:\n    server: " + server + "\n" + cluster +
			"users:\n- name: u\n  user:\n" + user
	}
	for _, c := range []struct {
		name, kubeconfig, want string
	}{
		{"auth-provider", kubeconfig("https://k:6443", "", "    auth-provider:\n      name: gcp\n"),
			`context "c"'s user "u" authenticates with an auth-provider plugin (gcp), which gpuform does not run`},
		{"exec", kubeconfig("https://k:6443", "", "    exec:\n      command: /bin/true\n"),
			`context "c"'s user "u" authenticates with an exec plugin, which gpuform does not run`},
		{"CA and insecure", kubeconfig("https://k:6443", "    certificate-authority-data: "+ca+"\n    insecure-skip-tls-verify: true\n", "    token: secret-token-123\n"),
			`cluster "k" gives both a certificate authority and insecure-skip-tls-verify`},
		{"token over http", kubeconfig("http://k:8080", "", "    token: secret-token-123\n"),
			`cluster "k"'s server http://k:8080 is not https, and user "u" has credentials`},
	} {
		p := filepath.Join(t.TempDir(), "config")
		if err := os.WriteFile(p, []byte(c.kubeconfig), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadKubeconfig(p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret-token-123") {
			t.Errorf("%s: the error prints the token: %v", c.name, err)
		}
	}
}
