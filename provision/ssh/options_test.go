package ssh

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const testConfig = `
Host gpu-*
  HostName %h.cluster.example
  User ops
  Port 2222
  IdentityFile ~/.ssh/gpu_%r
  ProxyJump bastion1, ops@bastion2:2200
  ConnectTimeout 7
  ServerAliveInterval 1m
  ServerAliveCountMax 5
  UserKnownHostsFile ~/.ssh/known_gpu /etc/gpu_known
  StrictHostKeyChecking accept-new

Host quiet
  ServerAliveInterval 0
  ProxyJump none

Host *
  User fallback
`

func TestResolvePrecedence(t *testing.T) {
	cfg := parseTestConfig(t, testConfig)
	e := env{getenv: hermetic(nil), home: "/home/me", localUser: "me"}
	tests := map[string]struct {
		spec   string
		target bool
		opts   Options
		want   endpoint
	}{
		"from ssh_config": {
			spec: "gpu-01", target: true,
			want: endpoint{
				alias: "gpu-01", hostname: "gpu-01.cluster.example", port: 2222, user: "ops",
				identityFiles:  []identityFile{{path: "/home/me/.ssh/gpu_ops", explicit: true}},
				knownHosts:     []string{"/home/me/.ssh/known_gpu", "/etc/gpu_known", "/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"},
				recordTo:       "/home/me/.ssh/known_gpu",
				acceptNew:      true,
				connectTimeout: 7 * time.Second, keepalive: time.Minute, keepaliveMax: 5,
				proxyJump: []string{"bastion1", "ops@bastion2:2200"},
			},
		},
		// Options are the command line: they win over the file.
		"options win": {
			spec: "gpu-01", target: true,
			opts: Options{User: "root", Port: 22, IdentityFiles: []string{"/k"}, KnownHostsFiles: []string{"/kh"},
				ConnectTimeout: time.Second, KeepaliveInterval: -1, KeepaliveCountMax: 2, ProxyJump: []string{"j"}},
			want: endpoint{
				alias: "gpu-01", hostname: "gpu-01.cluster.example", port: 22, user: "root",
				identityFiles: []identityFile{{path: "/k", explicit: true}, {path: "/home/me/.ssh/gpu_root", explicit: true}},
				knownHosts:    []string{"/kh"}, recordTo: "/kh", acceptNew: true,
				connectTimeout: time.Second, keepalive: -1, keepaliveMax: 2,
				proxyJump: []string{"j"},
			},
		},
		// What is written in the host string wins over everything.
		"host string wins": {
			spec: "admin@gpu-01:2022", target: true,
			opts: Options{User: "root", Port: 22},
			want: endpoint{
				alias: "gpu-01", hostname: "gpu-01.cluster.example", port: 2022, user: "admin",
				identityFiles:  []identityFile{{path: "/home/me/.ssh/gpu_admin", explicit: true}},
				knownHosts:     []string{"/home/me/.ssh/known_gpu", "/etc/gpu_known", "/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"},
				recordTo:       "/home/me/.ssh/known_gpu",
				acceptNew:      true,
				connectTimeout: 7 * time.Second, keepalive: time.Minute, keepaliveMax: 5,
				proxyJump: []string{"bastion1", "ops@bastion2:2200"},
			},
		},
		// Jump hosts do not take the target's user, port or ProxyJump
		// from Options.
		"jump host": {
			spec: "gpu-bastion", target: false,
			opts: Options{User: "root", Port: 22, ProxyJump: []string{"j"}},
			want: endpoint{
				alias: "gpu-bastion", hostname: "gpu-bastion.cluster.example", port: 2222, user: "ops",
				identityFiles:  []identityFile{{path: "/home/me/.ssh/gpu_ops", explicit: true}},
				knownHosts:     []string{"/home/me/.ssh/known_gpu", "/etc/gpu_known", "/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"},
				recordTo:       "/home/me/.ssh/known_gpu",
				acceptNew:      true,
				connectTimeout: 7 * time.Second, keepalive: time.Minute, keepaliveMax: 5,
				// Its own ProxyJump: Dial goes through it first, as ssh -J
				// does for the first jump host.
				proxyJump: []string{"bastion1", "ops@bastion2:2200"},
			},
		},
		"defaults": {
			spec: "quiet", target: true,
			want: endpoint{
				alias: "quiet", hostname: "quiet", port: 22, user: "fallback",
				identityFiles: []identityFile{
					{path: "/home/me/.ssh/id_ed25519"}, {path: "/home/me/.ssh/id_ecdsa"}, {path: "/home/me/.ssh/id_rsa"},
				},
				knownHosts:     []string{"/home/me/.ssh/known_hosts", "/home/me/.ssh/known_hosts2", "/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"},
				recordTo:       "/home/me/.ssh/known_hosts",
				connectTimeout: DefaultConnectTimeout, keepalive: -1, keepaliveMax: DefaultKeepaliveCountMax,
			},
		},
		"ipv6": {
			spec: "[fd00::1]:2200", target: true, opts: Options{KeepaliveInterval: time.Second},
			want: endpoint{
				alias: "fd00::1", hostname: "fd00::1", port: 2200, user: "fallback",
				identityFiles: []identityFile{
					{path: "/home/me/.ssh/id_ed25519"}, {path: "/home/me/.ssh/id_ecdsa"}, {path: "/home/me/.ssh/id_rsa"},
				},
				knownHosts:     []string{"/home/me/.ssh/known_hosts", "/home/me/.ssh/known_hosts2", "/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"},
				recordTo:       "/home/me/.ssh/known_hosts",
				connectTimeout: DefaultConnectTimeout, keepalive: time.Second, keepaliveMax: DefaultKeepaliveCountMax,
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			r := &resolver{opts: tt.opts, cfg: cfg, env: e}
			got, err := r.resolve(tt.spec, tt.target)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(endpoint{}, identityFile{})); diff != "" {
				t.Errorf("resolve(%q) (-want +got):\n%s", tt.spec, diff)
			}
		})
	}
}

// Without HOME only the system-wide file is left, and it is never written.
func TestNoHomeRecordsNowhere(t *testing.T) {
	r := &resolver{env: env{getenv: hermetic(nil), localUser: "me"}}
	ep, err := r.resolve("node", true)
	if err != nil {
		t.Fatal(err)
	}
	if ep.recordTo != "" || len(ep.knownHosts) != 2 || ep.knownHosts[0] != "/etc/ssh/ssh_known_hosts" {
		t.Errorf("knownHosts %v, recordTo %q", ep.knownHosts, ep.recordTo)
	}
}

func TestResolveErrors(t *testing.T) {
	tests := map[string]struct {
		config, spec string
	}{
		"bad port in config": {"Host x\n  Port http\n", "x"},
		"bad timeout":        {"Host x\n  ConnectTimeout soon\n", "x"},
		"bad count":          {"Host x\n  ServerAliveCountMax 0\n", "x"},
		"bad port in spec":   {"", "x:99999"},
		"empty host":         {"", "user@"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := parseTestConfig(t, tt.config)
			r := &resolver{cfg: cfg, env: env{getenv: hermetic(nil), localUser: "me"}}
			if _, err := r.resolve(tt.spec, true); err == nil {
				t.Errorf("resolve(%q) with %q: no error", tt.spec, tt.config)
			}
		})
	}
}

func TestSplitSpec(t *testing.T) {
	tests := map[string]struct {
		user, host string
		port       int
	}{
		"node":                     {"", "node", 0},
		"root@node":                {"root", "node", 0},
		"root@node:2222":           {"root", "node", 2222},
		"ssh://root@node:2222":     {"root", "node", 2222},
		"[fd00::1]:22":             {"", "fd00::1", 22},
		"[fd00::1]":                {"", "fd00::1", 0},
		"fd00::1":                  {"", "fd00::1", 0},
		"a@b@node":                 {"a@b", "node", 0},
		"10.0.0.1":                 {"", "10.0.0.1", 0},
		"user@10.0.0.1:65535":      {"user", "10.0.0.1", 65535},
		"gpu-01.cluster.example:1": {"", "gpu-01.cluster.example", 1},
	}
	for spec, tt := range tests {
		t.Run(spec, func(t *testing.T) {
			u, h, p, err := splitSpec(spec)
			if err != nil || u != tt.user || h != tt.host || p != tt.port {
				t.Errorf("splitSpec(%q) = %q, %q, %d, %v; want %q, %q, %d", spec, u, h, p, err, tt.user, tt.host, tt.port)
			}
		})
	}
	for _, bad := range []string{"", "node:", "node:0", "node:x", "[::1"} {
		if _, _, _, err := splitSpec(bad); err == nil {
			t.Errorf("splitSpec(%q): no error", bad)
		}
	}
}

func TestExpandTokens(t *testing.T) {
	tokens := map[byte]string{'h': "node", 'r': "root"}
	tests := map[string]string{
		"~/.ssh/%h_%r": "~/.ssh/node_root",
		"100%%":        "100%",
		"%x stays":     "%x stays",
		"trailing %":   "trailing %",
	}
	for in, want := range tests {
		if got := expandTokens(in, tokens); got != want {
			t.Errorf("expandTokens(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	e := env{getenv: hermetic(nil), home: dir}
	if cfg, err := loadConfig("", e); cfg != nil || err != nil {
		t.Errorf("missing ~/.ssh/config: got %v, %v; want no config and no error", cfg, err)
	}
	if cfg, err := loadConfig(NoConfig, e); cfg != nil || err != nil {
		t.Errorf("NoConfig: got %v, %v", cfg, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".ssh", "config"), []byte("Host a\n  Port 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig("", e)
	if err != nil || cfg == nil {
		t.Fatalf("~/.ssh/config: %v, %v", cfg, err)
	}
	hc, err := cfg.lookup("a", "", "me")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := hc.get("port"); v != "2" {
		t.Errorf("Port = %q", v)
	}
}

// parseTestConfig writes text to a file and reads it as ssh would.
func parseTestConfig(t *testing.T, text string) *sshConfig {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadSSHConfig(path, "/home/me")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Keywords gpuform cannot honour are refused for the hosts they apply to,
// naming the keyword and FILE:LINE; other hosts are unaffected.
func TestRefusedKeywordsNameTheLine(t *testing.T) {
	tests := map[string]struct {
		config, line, keyword string
	}{
		"ProxyCommand":         {"Host a\n  ProxyCommand nc %h %p\n", ":2", "ProxyCommand"},
		"HostKeyAlias":         {"Host b\n  Port 2\nHost a\n  HostKeyAlias other\n", ":4", "HostKeyAlias"},
		"CanonicalizeHostname": {"Host a\n  CanonicalizeHostname yes\n", ":2", "CanonicalizeHostname"},
		"Match exec":           {"Match host a exec \"test -e /x\"\n  Port 2\n", ":1", "Match exec"},
		"unknown Match":        {"Match a-thing x\n  Port 2\n", ":1", "Match a-thing"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := parseTestConfig(t, tt.config)
			r := &resolver{cfg: cfg, env: env{getenv: hermetic(nil), home: "/home/me", localUser: "me"}}
			_, err := r.resolve("a", true)
			if err == nil || !strings.Contains(err.Error(), "config"+tt.line+": ") || !strings.Contains(err.Error(), tt.keyword) {
				t.Errorf("resolve(a): %v; want an error naming %s at config%s", err, tt.keyword, tt.line)
			}
			if name == "unknown Match" {
				return
			}
			// ssh skips Match exec once an earlier criterion failed.
			if _, err := r.resolve("zzz", true); err != nil {
				t.Errorf("resolve(zzz), which the line does not apply to: %v", err)
			}
		})
	}
	// "none" is no proxy command.
	r := &resolver{cfg: parseTestConfig(t, "Host *\n  ProxyCommand none\n"), env: env{getenv: hermetic(nil), localUser: "me"}}
	if _, err := r.resolve("a", true); err != nil {
		t.Errorf("ProxyCommand none: %v", err)
	}
}

// Relative Include paths are taken from ~/.ssh, as ssh takes them for the
// user's configuration.
func TestIncludeRelativeToDotSSH(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".ssh", "conf.d"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "conf.d", "gpu.conf"), []byte("Host gpu1\n  Port 2201\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".ssh", "config"), []byte("Include conf.d/*.conf\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := env{getenv: hermetic(nil), home: home, localUser: "me"}
	cfg, err := loadConfig("", e)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := (&resolver{cfg: cfg, env: e}).resolve("gpu1", true)
	if err != nil || ep.port != 2201 {
		t.Errorf("port %d, %v; want 2201 from ~/.ssh/conf.d/gpu.conf", ep.port, err)
	}
}

func TestAgentAndKnownHostsKeywords(t *testing.T) {
	cfg := parseTestConfig(t, `Host a
  IdentityAgent ~/.ssh/agent-%h.sock
  GlobalKnownHostsFile /etc/fleet_known_hosts
  UserKnownHostsFile none
  CertificateFile ~/.ssh/id_ed25519-cert.pub
Host b
  IdentityAgent none
Host c
  IdentityAgent $MY_AGENT
`)
	e := env{getenv: hermetic(map[string]string{"SSH_AUTH_SOCK": "/run/agent", "MY_AGENT": "/run/mine"}), home: "/home/me", localUser: "me"}
	r := &resolver{cfg: cfg, env: e}
	tests := map[string]struct {
		agent, recordTo string
		known, certs    []string
	}{
		"a": {"/home/me/.ssh/agent-a.sock", "", []string{"/etc/fleet_known_hosts"}, []string{"/home/me/.ssh/id_ed25519-cert.pub"}},
		"b": {"", "/home/me/.ssh/known_hosts", []string{"/home/me/.ssh/known_hosts", "/home/me/.ssh/known_hosts2", "/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"}, nil},
		"c": {"/run/mine", "/home/me/.ssh/known_hosts", []string{"/home/me/.ssh/known_hosts", "/home/me/.ssh/known_hosts2", "/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"}, nil},
		"d": {"/run/agent", "/home/me/.ssh/known_hosts", []string{"/home/me/.ssh/known_hosts", "/home/me/.ssh/known_hosts2", "/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"}, nil},
	}
	for host, tt := range tests {
		ep, err := r.resolve(host, true)
		if err != nil {
			t.Fatal(err)
		}
		if ep.identityAgent != tt.agent || ep.recordTo != tt.recordTo || !slices.Equal(ep.knownHosts, tt.known) || !slices.Equal(ep.certificateFiles, tt.certs) {
			t.Errorf("%s: agent %q, known %v (record to %q), certs %v; want %q, %v (%q), %v",
				host, ep.identityAgent, ep.knownHosts, ep.recordTo, ep.certificateFiles, tt.agent, tt.known, tt.recordTo, tt.certs)
		}
	}
}

// A first jump host's own ProxyJump is followed, as `ssh -J` does: the
// chain is bastion0, bastion1, then the target's second hop.
func TestJumpChainFollowsFirstHop(t *testing.T) {
	cfg := parseTestConfig(t, `Host gpu*
  ProxyJump bastion1,inner
Host bastion1
  ProxyJump bastion0
Host inner
  ProxyJump ignored
Host loop
  ProxyJump loop
`)
	r := &resolver{cfg: cfg, env: env{getenv: hermetic(nil), home: "/home/me", localUser: "me"}}
	target, err := r.resolve("gpu1", true)
	if err != nil {
		t.Fatal(err)
	}
	chain, err := r.chain(target.proxyJump, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ep := range chain {
		got = append(got, ep.alias)
	}
	if want := []string{"bastion0", "bastion1", "inner"}; !slices.Equal(got, want) {
		t.Errorf("chain %v, want %v", got, want)
	}
	if _, err := r.chain([]string{"loop"}, 0); err == nil || !strings.Contains(err.Error(), "loop") {
		t.Errorf("a ProxyJump loop: %v", err)
	}
}
