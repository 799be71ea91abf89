// Package plantest runs plan and apply end to end in tests: simulated GPU
// nodes (provision/sim roots with their recording stand-ins) reached over
// a real OpenSSH sshd on 127.0.0.1 (internal/sshtest), one SSH connection
// per host, the way a fleet is reached in production.
//
// It is test support only; nothing in gpuform imports it outside tests.
package plantest

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/modules"
	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/ssh"
	"github.com/gpuform/gpuform/provision/target"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/spec"
)

// Fleet is a set of simulated hosts behind one loopback sshd.
type Fleet struct {
	// Server is the sshd every host is reached through.
	Server *sshtest.Server
	// State is the directory holding the simulated roots.
	State string
	// KB is the knowledge base Plan plans with, parsed from the embedded
	// tables as the CLI does; apply tests pass it on in apply.Options.
	KB *kb.KB

	t     testing.TB
	mu    sync.Mutex
	roots map[string]string
	execs atomic.Int64
}

// Start starts sshd and returns an empty fleet; hosts are materialised on
// first connect, or with Root.
func Start(t testing.TB) *Fleet {
	t.Helper()
	k, err := kb.Load()
	if err != nil {
		t.Fatalf("plantest: %v", err)
	}
	return &Fleet{Server: sshtest.Start(t, sshtest.Options{}), State: t.TempDir(), KB: k, t: t, roots: map[string]string{}}
}

// Root materialises (once) and returns the simulated root of host.
func (f *Fleet) Root(host string) string {
	f.t.Helper()
	root, err := f.root(host)
	if err != nil {
		f.t.Fatalf("plantest: %v", err)
	}
	return root
}

func (f *Fleet) root(host string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.roots[host]; ok {
		return r, nil
	}
	r, err := sim.MaterializeHost(host, f.State)
	if err != nil {
		return "", err
	}
	f.roots[host] = r
	return r, nil
}

// Connect is a target.Connector: it dials the loopback sshd and runs every
// command of h against h's simulated root.
func (f *Fleet) Connect(ctx context.Context, h spec.Host) (transport.Transport, error) {
	root, err := f.root(h.Name)
	if err != nil {
		return nil, &transport.HostError{Host: h.Name, Op: "connect", Err: err}
	}
	c, err := ssh.Dial(ctx, f.Server.Host, ssh.Options{
		User:            f.Server.User,
		Port:            f.Server.Port,
		IdentityFiles:   []string{f.Server.UserKeyFile},
		KnownHostsFiles: []string{f.Server.KnownHostsFile},
		SSHConfigPath:   ssh.NoConfig,
		Getenv:          func(string) string { return "" },
		ConnectTimeout:  20 * time.Second,
	})
	if err != nil {
		return nil, err
	}
	env := map[string]string{
		"GPUFORM_ROOT": root,
		"GPUFORM_SIM":  "1",
		"PATH":         filepath.Join(root, filepath.FromSlash(sim.BinDir)) + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	}
	return &simOverSSH{inner: c, host: h.Name, env: env, execs: &f.execs}, nil
}

// Options are the target options of the CLI with this fleet's connector.
func (f *Fleet) Options() target.Options {
	return target.Options{Connect: f.Connect}
}

// Plan selects every host of cfg and plans it the way plan and apply do
// (target.Select, then plan.Run).
func (f *Fleet) Plan(ctx context.Context, cfg *spec.Config) (*plan.Plan, error) {
	hosts, diags := target.Select(cfg, nil)
	if diags.HasErrors() {
		return nil, diags
	}
	return plan.Run(ctx, f.KB, hosts, f.Options())
}

// Execs is the number of remote commands run so far, over all hosts.
func (f *Fleet) Execs() int64 { return f.execs.Load() }

// Calls returns the stand-in command lines recorded in host's root, in
// order ("apt-get install -y …"), without plan's read-only package listing
// (apt-cache madison, dnf list).
func (f *Fleet) Calls(host string) []string {
	f.t.Helper()
	fh, err := os.Open(filepath.Join(f.Root(host), "var/log/gpuform-sim/calls.log"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	defer fh.Close()
	var out []string
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		// The package listing plan's probe runs reads only; the calls a
		// test counts are the ones that act.
		if line := sc.Text(); !strings.HasPrefix(line, "apt-cache madison ") && !strings.HasPrefix(line, "dnf -q -C list --showduplicates ") {
			out = append(out, line)
		}
	}
	return out
}

// Fail makes the stand-in tool fail on host with msg until Unfail.
func (f *Fleet) Fail(host, tool, msg string) {
	f.t.Helper()
	dir := filepath.Join(f.Root(host), "var/lib/gpuform-sim/fail")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, tool), []byte(msg), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// Unfail removes a failure switch set by Fail.
func (f *Fleet) Unfail(host, tool string) {
	f.t.Helper()
	if err := os.Remove(filepath.Join(f.Root(host), "var/lib/gpuform-sim/fail", tool)); err != nil {
		f.t.Fatal(err)
	}
}

// ReadFile reads a file of host's root by its path on the node.
func (f *Fleet) ReadFile(host, path string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.Root(host), filepath.FromSlash(strings.TrimPrefix(path, "/"))))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

// WriteFile replaces a file of host's root, as an operator editing the
// node would.
func (f *Fleet) WriteFile(host, path, content string) {
	f.t.Helper()
	p := filepath.Join(f.Root(host), filepath.FromSlash(strings.TrimPrefix(path, "/")))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// LoadSpec loads a spec from in-memory files with the built-in modules.
func LoadSpec(t testing.TB, files map[string]string) *spec.Config {
	t.Helper()
	src := map[string][]byte{}
	for k, v := range files {
		src[k] = []byte(v)
	}
	cfg, diags := spec.LoadFiles(src, spec.LoadOptions{BuiltinModules: modules.FS()})
	if diags.HasErrors() {
		t.Fatalf("spec: %v", diags)
	}
	return cfg
}

// simOverSSH adds the simulated root's environment to every command.
type simOverSSH struct {
	inner transport.Transport
	host  string
	env   map[string]string
	execs *atomic.Int64
}

func (s *simOverSSH) Host() string { return s.host }

func (s *simOverSSH) Run(ctx context.Context, cmd transport.Command) (transport.Result, error) {
	env := map[string]string{}
	for k, v := range s.env {
		env[k] = v
	}
	for k, v := range cmd.Env {
		if k == "GPUFORM_ROOT" {
			continue // the root is the simulated node's identity
		}
		env[k] = v
	}
	cmd.Env = env
	s.execs.Add(1)
	res, err := s.inner.Run(ctx, cmd)
	if he, ok := err.(*transport.HostError); ok {
		he.Host = s.host
	}
	return res, err
}

func (s *simOverSSH) Close() error { return s.inner.Close() }
