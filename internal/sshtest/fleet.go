package sshtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Fleet is many "hosts" for fleet tests and benchmarks: host aliases in an
// ssh_config file, spread round-robin over a few sshd servers that share
// one user key, with a known_hosts file that knows every server. Each alias
// is its own connection, as separate hosts would be; a handful of sshds
// keeps the test machine's process count sane.
type Fleet struct {
	// Servers are the running sshds.
	Servers []*Server
	// Hosts are the aliases, "node-000", "node-001", …
	Hosts []string
	// ConfigFile is the ssh_config naming every alias (HostName 127.0.0.1,
	// Port of its server, User, IdentityFile).
	ConfigFile string
	// KnownHostsFile holds every server's host key.
	KnownHostsFile string
	// User is the login user, and UserKeyFile the key every server accepts.
	User        string
	UserKeyFile string

	mu     sync.Mutex
	t      testing.TB
	config strings.Builder
}

// StartFleet starts servers sshds with opts (UserKey is generated once and
// shared when nil) and names hosts aliases over them.
func StartFleet(t testing.TB, servers, hosts int, opts Options) *Fleet {
	t.Helper()
	if servers < 1 {
		servers = 1
	}
	if opts.UserKey == nil {
		opts.UserKey = NewKey(t)
	}
	f := &Fleet{t: t}
	var known strings.Builder
	for i := 0; i < servers; i++ {
		srv := Start(t, opts)
		f.Servers = append(f.Servers, srv)
		known.WriteString(srv.KnownHostsLine + "\n")
	}
	dir := t.TempDir()
	f.ConfigFile = filepath.Join(dir, "ssh_config")
	f.KnownHostsFile = filepath.Join(dir, "known_hosts")
	f.User = f.Servers[0].User
	f.UserKeyFile = f.Servers[0].UserKeyFile
	if err := os.WriteFile(f.KnownHostsFile, []byte(known.String()), 0o600); err != nil {
		t.Fatalf("sshtest: %v", err)
	}
	for i := 0; i < hosts; i++ {
		name := fmt.Sprintf("node-%03d", i)
		f.Hosts = append(f.Hosts, name)
		f.addLocked(name, f.Servers[i%servers].Port, "")
	}
	f.write()
	return f
}

// AddHost adds an alias for 127.0.0.1:port to the ssh_config file (not to
// Hosts), with extra ssh_config lines such as "ConnectTimeout 1". Tests use
// it for hosts that fail: a closed port, a stranger's sshd.
func (f *Fleet) AddHost(alias string, port int, extra ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.addLocked(alias, port, strings.Join(extra, "\n  "))
	f.write()
}

func (f *Fleet) addLocked(alias string, port int, extra string) {
	fmt.Fprintf(&f.config, "Host %s\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n",
		alias, port, f.User, f.UserKeyFile)
	if extra != "" {
		fmt.Fprintf(&f.config, "  %s\n", extra)
	}
	f.config.WriteString("\n")
}

func (f *Fleet) write() {
	if err := os.WriteFile(f.ConfigFile, []byte(f.config.String()), 0o600); err != nil {
		f.t.Fatalf("sshtest: %v", err)
	}
}

// Logins and Sessions sum the servers' counts (see Server.Logins).
func (f *Fleet) Logins() int {
	n := 0
	for _, s := range f.Servers {
		n += s.Logins()
	}
	return n
}

// Sessions sums the servers' session counts (see Server.Sessions).
func (f *Fleet) Sessions() int {
	n := 0
	for _, s := range f.Servers {
		n += s.Sessions()
	}
	return n
}
