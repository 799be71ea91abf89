package sshtest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func dial(t *testing.T, s *Server) *gossh.Client {
	t.Helper()
	cb, err := knownhosts.New(s.KnownHostsFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := gossh.Dial("tcp", s.Addr, &gossh.ClientConfig{
		User:            s.User,
		Auth:            []gossh.AuthMethod{gossh.PublicKeys(s.UserSigner)},
		HostKeyCallback: cb,
		Timeout:         5 * time.Second,
	})
	if err != nil {
		t.Fatalf("dial %s: %v", s.Addr, err)
	}
	return c
}

func TestServerRunsCommandsAndCountsThem(t *testing.T) {
	s := Start(t, Options{})
	c := dial(t, s)
	defer c.Close()
	for i := 0; i < 3; i++ {
		sess, err := c.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		out, err := sess.Output("id -un")
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if got := strings.TrimSpace(string(out)); got != s.User {
			t.Errorf("id -un = %q, want %q", got, s.User)
		}
	}
	if !s.WaitLog("Starting session", time.Second) {
		t.Fatalf("no session in log:\n%s", s.Log())
	}
	if got := s.Logins(); got != 1 {
		t.Errorf("Logins() = %d, want 1", got)
	}
	if got := s.Sessions(); got != 3 {
		t.Errorf("Sessions() = %d, want 3\n%s", got, s.Log())
	}
}

func TestKillDropsConnectionsAndRestartKeepsAddress(t *testing.T) {
	s := Start(t, Options{})
	c := dial(t, s)
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Start("sleep 30"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	time.Sleep(100 * time.Millisecond)
	s.Kill()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("command finished cleanly after sshd was killed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("client still waiting 5s after sshd was killed")
	}
	c.Close()
	s.Restart()
	c2 := dial(t, s)
	c2.Close()
}

func TestHostCertificate(t *testing.T) {
	ca, err := gossh.NewSignerFromKey(NewKey(t))
	if err != nil {
		t.Fatal(err)
	}
	s := Start(t, Options{HostCA: ca})
	checker := &gossh.CertChecker{
		IsHostAuthority: func(auth gossh.PublicKey, addr string) bool {
			return string(auth.Marshal()) == string(ca.PublicKey().Marshal())
		},
	}
	c, err := gossh.Dial("tcp", s.Addr, &gossh.ClientConfig{
		User:              s.User,
		Auth:              []gossh.AuthMethod{gossh.PublicKeys(s.UserSigner)},
		HostKeyCallback:   checker.CheckHostKey,
		HostKeyAlgorithms: []string{gossh.CertAlgoED25519v01},
	})
	if err != nil {
		t.Fatalf("dial with host certificate: %v", err)
	}
	c.Close()
}

func TestParseStat(t *testing.T) {
	tests := map[string]struct {
		in   string
		comm string
		ppid int
		ok   bool
	}{
		"plain": {"12 (sshd) S 1 12 12 0", "sshd", 1, true},
		// A command name may hold spaces and a closing paren.
		"odd comm": {"13 (a) b) S 7 13", "a) b", 7, true},
		"garbage":  {"nonsense", "", 0, false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			comm, ppid, ok := parseStat([]byte(tt.in))
			if comm != tt.comm || ppid != tt.ppid || ok != tt.ok {
				t.Errorf("parseStat(%q) = %q, %d, %v; want %q, %d, %v", tt.in, comm, ppid, ok, tt.comm, tt.ppid, tt.ok)
			}
		})
	}
}

func TestSessionEnvironment(t *testing.T) {
	s := Start(t, Options{Env: map[string]string{"GPUFORM_TEST": "a b", "PATH": "/usr/bin:/bin"}})
	c := dial(t, s)
	defer c.Close()
	sess, err := c.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	out, err := sess.Output(`printf '%s|%s|%s' "$HOME" "$GPUFORM_TEST" "$PATH"`)
	if err != nil {
		t.Fatal(err)
	}
	if want := s.Home + "|a b|/usr/bin:/bin"; string(out) != want {
		t.Errorf("session environment = %q, want %q", out, want)
	}
}

// TestParallelServersAreDistinct starts servers from parallel tests, as
// other packages' tests do; each client must reach its own server (the
// host key check in dial fails otherwise).
func TestParallelServersAreDistinct(t *testing.T) {
	for i := 0; i < 6; i++ {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			s := Start(t, Options{})
			dial(t, s).Close()
		})
	}
}
