package ssh

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/provision/transport"
)

// hermetic returns a Getenv that sees only vars: no SSH_AUTH_SOCK, HOME or
// USER from the machine running the tests.
func hermetic(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// optsFor logs in to srv with its generated user key and known_hosts file,
// reading no ssh_config and no agent.
func optsFor(srv *sshtest.Server) Options {
	return Options{
		User:            srv.User,
		Port:            srv.Port,
		IdentityFiles:   []string{srv.UserKeyFile},
		KnownHostsFiles: []string{srv.KnownHostsFile},
		SSHConfigPath:   NoConfig,
		Getenv:          hermetic(nil),
		ConnectTimeout:  10 * time.Second,
	}
}

func dial(t *testing.T, srv *sshtest.Server, opts Options) *Client {
	t.Helper()
	c, err := Dial(context.Background(), srv.Host, opts)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// hostErr asserts err is a *transport.HostError with the given op.
func hostErr(t *testing.T, err error, op string) *transport.HostError {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want a %q HostError", op)
	}
	var he *transport.HostError
	if !errors.As(err, &he) {
		t.Fatalf("error %v (%T) is not a *transport.HostError", err, err)
	}
	if he.Op != op {
		t.Fatalf("HostError op = %q, want %q (error: %v)", he.Op, op, err)
	}
	return he
}

func TestRun(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	c := dial(t, srv, optsFor(srv))
	big := 3 << 20
	tests := map[string]struct {
		cmd        transport.Command
		wantOut    string
		wantErr    string
		wantExit   int
		wantOutLen int
		anyStderr  bool // the shell's own report ("Killed") varies
	}{
		"true":        {cmd: transport.Command{Script: "true"}},
		"exit status": {cmd: transport.Command{Script: "echo out; echo err >&2; exit 3"}, wantOut: "out\n", wantErr: "err\n", wantExit: 3},
		"stdin":       {cmd: transport.Command{Script: "tr a-z A-Z", Stdin: strings.NewReader("hello\nworld\n")}, wantOut: "HELLO\nWORLD\n"},
		// Values with quotes, spaces and $ must arrive byte for byte.
		"env": {cmd: transport.Command{Script: `printf '%s|%s' "$A" "$B_2"`, Env: map[string]string{"A": `it's $HOME "x"`, "B_2": ""}}, wantOut: `it's $HOME "x"|`},
		// A trailing comment must not swallow the supervisor's wrapping.
		"trailing comment": {cmd: transport.Command{Script: "echo hi # done"}, wantOut: "hi\n"},
		"multi-line":       {cmd: transport.Command{Script: "x=1\nif [ $x = 1 ]; then\n  echo one\nfi"}, wantOut: "one\n"},
		"posix sh":         {cmd: transport.Command{Script: `readlink /proc/$$/exe`}, wantOut: mustReadlink(t, "/bin/sh") + "\n"},
		"large output":     {cmd: transport.Command{Script: "head -c " + strconv.Itoa(big) + " /dev/zero"}, wantOutLen: big},
		// The shell's own status for a child killed by a signal.
		"child killed by signal": {cmd: transport.Command{Script: "sh -c 'kill -KILL $$'"}, wantExit: 128 + 9, anyStderr: true},
		// The script's shell itself killed: no exit status, only a signal.
		"killed by signal": {cmd: transport.Command{Script: "kill -KILL $$"}, wantExit: -1},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			res, err := c.Run(context.Background(), tt.cmd)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if tt.wantOutLen > 0 {
				if len(res.Stdout) != tt.wantOutLen {
					t.Errorf("stdout is %d bytes, want %d", len(res.Stdout), tt.wantOutLen)
				}
			} else if string(res.Stdout) != tt.wantOut {
				t.Errorf("stdout = %q, want %q", res.Stdout, tt.wantOut)
			}
			if !tt.anyStderr && string(res.Stderr) != tt.wantErr {
				t.Errorf("stderr = %q, want %q", res.Stderr, tt.wantErr)
			}
			if res.ExitCode != tt.wantExit {
				t.Errorf("exit code = %d, want %d", res.ExitCode, tt.wantExit)
			}
		})
	}
	// A stdin that never ends must not keep Run waiting once the command
	// has exited.
	pr, pw := io.Pipe()
	defer pw.Close()
	done := make(chan error, 1)
	go func() {
		_, err := c.Run(context.Background(), transport.Command{Script: "head -c 3", Stdin: pr})
		done <- err
	}()
	if _, err := pw.Write([]byte("abcdef")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run with an open stdin: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run still waiting on stdin 10s after the command read what it needed")
	}
	if _, err := c.Run(context.Background(), transport.Command{Script: "true", Env: map[string]string{"A;rm": "x"}}); err == nil {
		t.Error("an environment name that is not a shell identifier was accepted")
	}
}

func mustReadlink(t *testing.T, p string) string {
	t.Helper()
	got, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestConnectionIsReused(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	c := dial(t, srv, optsFor(srv))
	const sequential, concurrent = 5, 4
	var ports []string
	for i := 0; i < sequential; i++ {
		res, err := c.Run(context.Background(), transport.Command{Script: `echo "$SSH_CONNECTION"`})
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, strings.Fields(string(res.Stdout))[1])
	}
	var wg sync.WaitGroup
	errs := make(chan error, concurrent)
	for i := 0; i < concurrent; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Run(context.Background(), transport.Command{Script: "sleep 0.1"})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range ports {
		if p != ports[0] {
			t.Errorf("commands came from client ports %v: more than one connection", ports)
			break
		}
	}
	srv.WaitLog("Starting session", time.Second)
	if got := srv.Logins(); got != 1 {
		t.Errorf("sshd saw %d logins, want 1", got)
	}
	// sshd may log the last session start a moment after it ran.
	deadline := time.Now().Add(2 * time.Second)
	for srv.Sessions() < sequential+concurrent && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := srv.Sessions(); got != sequential+concurrent {
		t.Errorf("sshd saw %d sessions, want %d", got, sequential+concurrent)
	}
}

func TestUnknownHostKeyIsRefused(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	opts := optsFor(srv)
	empty := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, files := range map[string][]string{
		"empty file": {empty},
		// A fresh machine has no known_hosts at all.
		"missing file": {filepath.Join(t.TempDir(), "nope", "known_hosts")},
	} {
		t.Run(name, func(t *testing.T) {
			opts.KnownHostsFiles = files
			_, err := Dial(context.Background(), srv.Host, opts)
			he := hostErr(t, err, "host key")
			var unknown *UnknownHostKeyError
			if !errors.As(err, &unknown) {
				t.Fatalf("error %v is not an UnknownHostKeyError", err)
			}
			fp := gossh.FingerprintSHA256(srv.HostPublicKey)
			for _, want := range []string{fp, "[127.0.0.1]:" + strconv.Itoa(srv.Port), "--accept-new-host-keys"} {
				if !strings.Contains(he.Error(), want) {
					t.Errorf("error %q does not mention %q", he.Error(), want)
				}
			}
			if data, _ := os.ReadFile(files[0]); len(data) != 0 {
				t.Errorf("known_hosts was written without AcceptNewHostKeys: %q", data)
			}
		})
	}
	if srv.Logins() != 0 {
		t.Errorf("client logged in to a host whose key it did not know")
	}
}

func TestAcceptNewHostKeyRecordsOneLine(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	opts := optsFor(srv)
	kh := filepath.Join(t.TempDir(), "ssh", "known_hosts")
	opts.KnownHostsFiles = []string{kh}
	opts.AcceptNewHostKeys = true

	// Several connections at once, as a fleet run makes them, record the
	// host once.
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := Dial(context.Background(), srv.Host, opts)
			if err == nil {
				c.Close()
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Dial with AcceptNewHostKeys: %v", err)
		}
	}
	data, err := os.ReadFile(kh)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(data), srv.KnownHostsLine+"\n"; got != want {
		t.Fatalf("known_hosts = %q, want exactly %q", got, want)
	}

	opts.AcceptNewHostKeys = false
	c := dial(t, srv, opts)
	c.Close()
	after, _ := os.ReadFile(kh)
	if !bytes.Equal(after, data) {
		t.Errorf("second dial changed known_hosts: %q", after)
	}
}

func TestChangedHostKeyIsAlwaysRefused(t *testing.T) {
	first := sshtest.Start(t, sshtest.Options{})
	oldKnownHosts := filepath.Join(t.TempDir(), "known_hosts")
	// The old key on line 2, after an unrelated host.
	content := "other.example.com ssh-ed25519 " + strings.Fields(first.KnownHostsLine)[2] + "\n" + first.KnownHostsLine + "\n"
	if err := os.WriteFile(oldKnownHosts, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	first.Stop()
	// The "host" is reinstalled: same address, new host key.
	second := sshtest.Start(t, sshtest.Options{Port: first.Port, UserKey: first.UserKey})

	for _, accept := range []bool{false, true} {
		t.Run(fmt.Sprintf("accept-new=%v", accept), func(t *testing.T) {
			opts := optsFor(second)
			opts.KnownHostsFiles = []string{oldKnownHosts}
			opts.AcceptNewHostKeys = accept
			_, err := Dial(context.Background(), second.Host, opts)
			he := hostErr(t, err, "host key")
			var changed *ChangedHostKeyError
			if !errors.As(err, &changed) {
				t.Fatalf("error %v is not a ChangedHostKeyError", err)
			}
			for _, want := range []string{
				gossh.FingerprintSHA256(second.HostPublicKey),
				gossh.FingerprintSHA256(first.HostPublicKey),
				oldKnownHosts + ":2",
				"CHANGED",
				// As ssh prints it: quoted, with the file, pasteable.
				fmt.Sprintf(`ssh-keygen -f "%s" -R "[127.0.0.1]:%d"`, oldKnownHosts, second.Port),
			} {
				if !strings.Contains(he.Error(), want) {
					t.Errorf("error %q does not mention %q", he.Error(), want)
				}
			}
		})
	}
	if data, _ := os.ReadFile(oldKnownHosts); string(data) != content {
		t.Errorf("known_hosts was modified: %q", data)
	}
	if second.Logins() != 0 {
		t.Errorf("client logged in to a host whose key changed")
	}
}

func TestCertAuthorityLine(t *testing.T) {
	ca, err := gossh.NewSignerFromKey(sshtest.NewKey(t))
	if err != nil {
		t.Fatal(err)
	}
	other, err := gossh.NewSignerFromKey(sshtest.NewKey(t))
	if err != nil {
		t.Fatal(err)
	}
	srv := sshtest.Start(t, sshtest.Options{HostCA: ca})
	tests := map[string]struct {
		caKey gossh.PublicKey
		ok    bool
	}{
		"trusted authority": {ca.PublicKey(), true},
		// A certificate from another authority proves nothing.
		"other authority": {other.PublicKey(), false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			kh := filepath.Join(t.TempDir(), "known_hosts")
			line := "@cert-authority [127.0.0.1]:" + strconv.Itoa(srv.Port) + " " + string(gossh.MarshalAuthorizedKey(tt.caKey))
			if err := os.WriteFile(kh, []byte(line), 0o600); err != nil {
				t.Fatal(err)
			}
			opts := optsFor(srv)
			opts.KnownHostsFiles = []string{kh}
			c, err := Dial(context.Background(), srv.Host, opts)
			if tt.ok {
				if err != nil {
					t.Fatalf("Dial: %v", err)
				}
				c.Close()
				return
			}
			hostErr(t, err, "host key")
		})
	}
}

func TestProxyJump(t *testing.T) {
	userKey := sshtest.NewKey(t)
	bastion1 := sshtest.Start(t, sshtest.Options{UserKey: userKey})
	bastion2 := sshtest.Start(t, sshtest.Options{UserKey: userKey})
	target := sshtest.Start(t, sshtest.Options{UserKey: userKey})
	kh := filepath.Join(t.TempDir(), "known_hosts")
	all := bastion1.KnownHostsLine + "\n" + bastion2.KnownHostsLine + "\n" + target.KnownHostsLine + "\n"
	if err := os.WriteFile(kh, []byte(all), 0o600); err != nil {
		t.Fatal(err)
	}
	hop := func(s *sshtest.Server) string { return s.User + "@" + s.Addr }

	t.Run("two bastions", func(t *testing.T) {
		opts := optsFor(target)
		opts.KnownHostsFiles = []string{kh}
		opts.ProxyJump = []string{hop(bastion1), hop(bastion2)}
		c := dial(t, target, opts)
		res, err := c.Run(context.Background(), transport.Command{Script: `echo "$SSH_CONNECTION"`})
		if err != nil {
			t.Fatal(err)
		}
		// The target sees the connection come from the last bastion's
		// forwarding, not from our own socket.
		if f := strings.Fields(string(res.Stdout)); len(f) != 4 || f[3] != strconv.Itoa(target.Port) {
			t.Errorf("SSH_CONNECTION = %q", res.Stdout)
		}
		for name, s := range map[string]*sshtest.Server{"bastion1": bastion1, "bastion2": bastion2, "target": target} {
			if !s.WaitLog("Accepted publickey", time.Second) {
				t.Errorf("%s saw no login", name)
			}
		}
		if !bastion2.WaitLog("direct-tcpip", time.Second) && !bastion2.WaitLog("Connection from 127.0.0.1", 0) {
			t.Logf("bastion2 log:\n%s", bastion2.Log())
		}
	})

	t.Run("unknown bastion key", func(t *testing.T) {
		only := filepath.Join(t.TempDir(), "known_hosts")
		if err := os.WriteFile(only, []byte(target.KnownHostsLine+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		opts := optsFor(target)
		opts.KnownHostsFiles = []string{only}
		opts.ProxyJump = []string{hop(bastion1)}
		_, err := Dial(context.Background(), target.Host, opts)
		he := hostErr(t, err, "host key")
		if !strings.Contains(he.Error(), "jump host 127.0.0.1") {
			t.Errorf("error %q does not say the jump host failed", he.Error())
		}
	})

	t.Run("from ssh_config", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "config")
		text := fmt.Sprintf("Host node\n  HostName 127.0.0.1\n  Port %d\n  ProxyJump jump\n\nHost jump\n  HostName 127.0.0.1\n  Port %d\n\nHost *\n  User %s\n",
			target.Port, bastion1.Port, target.User)
		if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		opts := Options{
			IdentityFiles:   []string{target.UserKeyFile},
			KnownHostsFiles: []string{kh},
			SSHConfigPath:   cfg,
			Getenv:          hermetic(nil),
		}
		c, err := Dial(context.Background(), "node", opts)
		if err != nil {
			t.Fatalf("Dial through ProxyJump from ssh_config: %v", err)
		}
		c.Close()
	})
}

func TestConnectFaults(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})

	t.Run("refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		opts := optsFor(srv)
		opts.Port = port
		_, err = Dial(context.Background(), "127.0.0.1", opts)
		he := hostErr(t, err, "connect")
		if !strings.Contains(he.Error(), "refused") {
			t.Errorf("error %q does not say the connection was refused", he.Error())
		}
	})

	t.Run("no banner", func(t *testing.T) {
		// Something accepts the connection and never speaks SSH: a hung
		// sshd or a firewall that black-holes after accept.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				defer c.Close()
			}
		}()
		opts := optsFor(srv)
		opts.Port = l.Addr().(*net.TCPAddr).Port
		opts.ConnectTimeout = 300 * time.Millisecond
		start := time.Now()
		_, err = Dial(context.Background(), "127.0.0.1", opts)
		hostErr(t, err, "timeout")
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("Dial took %s with a 300ms connect timeout", d)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := Dial(ctx, srv.Host, optsFor(srv))
		hostErr(t, err, "connect")
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v does not wrap context.Canceled", err)
		}
	})

	t.Run("bad host name", func(t *testing.T) {
		opts := optsFor(srv)
		opts.ConnectTimeout = 5 * time.Second
		_, err := Dial(context.Background(), "no-such-host.invalid", opts)
		hostErr(t, err, "resolve")
	})

	t.Run("unsupported become", func(t *testing.T) {
		opts := optsFor(srv)
		opts.Become = "doas"
		_, err := Dial(context.Background(), srv.Host, opts)
		hostErr(t, err, "resolve")
		// A Dialer reports it once, for every host, as a plain error.
		if _, err := NewDialer(opts); err == nil || errors.As(err, new(*transport.HostError)) {
			t.Errorf("NewDialer with become doas: %v, want a plain error", err)
		}
	})
}

func TestRunFaults(t *testing.T) {
	t.Run("sshd killed mid-command", func(t *testing.T) {
		srv := sshtest.Start(t, sshtest.Options{})
		c := dial(t, srv, optsFor(srv))
		errc := make(chan error, 1)
		go func() {
			_, err := c.Run(context.Background(), transport.Command{Script: "echo started; sleep 30"})
			errc <- err
		}()
		if !srv.WaitLog("Starting session", 5*time.Second) {
			t.Fatal("command never started")
		}
		srv.Kill()
		select {
		case err := <-errc:
			hostErr(t, err, "run")
		case <-time.After(10 * time.Second):
			t.Fatal("Run still waiting 10s after sshd was killed")
		}
		// The connection is known dead: later commands fail at once.
		_, err := c.Run(context.Background(), transport.Command{Script: "true"})
		hostErr(t, err, "run")
	})

	t.Run("command timeout ends the remote command", func(t *testing.T) {
		srv := sshtest.Start(t, sshtest.Options{})
		opts := optsFor(srv)
		// Generous numbers: a loaded 2-core CI machine takes hundreds of
		// milliseconds to start an sshd session.
		opts.CommandTimeout = 2 * time.Second
		c := dial(t, srv, opts)
		marker := filepath.Join(t.TempDir(), "still-running")
		start := time.Now()
		_, err := c.Run(context.Background(), transport.Command{Script: "sleep 4; touch " + transport.Quote(marker)})
		he := hostErr(t, err, "timeout")
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(he.Error(), "2s") {
			t.Errorf("error %v does not say the command timed out after 2s", err)
		}
		if d := time.Since(start); d > 3500*time.Millisecond {
			t.Errorf("Run returned after %s with a 2s command timeout", d)
		}
		time.Sleep(time.Until(start.Add(4500 * time.Millisecond)))
		if _, err := os.Stat(marker); err == nil {
			t.Error("the remote command went on running after its timeout")
		}
		// The connection survives a timed-out command.
		if _, err := c.Run(context.Background(), transport.Command{Script: "true"}); err != nil {
			t.Errorf("Run after a timeout: %v", err)
		}
	})

	t.Run("endless output ends the remote command", func(t *testing.T) {
		srv := sshtest.Start(t, sshtest.Options{})
		c := dial(t, srv, optsFor(srv))
		for _, stream := range []string{"stdout", "stderr"} {
			script := "yes gpuform"
			if stream == "stderr" {
				script += " >&2"
			}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			_, err := c.Run(ctx, transport.Command{Script: script})
			he := hostErr(t, err, "output")
			var le *transport.OutputLimitError
			if !errors.As(err, &le) || le.Stream != stream || ctx.Err() != nil {
				t.Errorf("%s: error %v, want the %s limit well within 90s", stream, he, stream)
			}
			cancel()
		}
		// The connection survives, and the endless command was stopped
		// (its supervisor's trap passes SIGTERM on within moments).
		var left string
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			res, err := c.Run(context.Background(), transport.Command{Script: "pgrep -x yes || true"})
			if err != nil {
				t.Fatalf("Run after the output limit: %v", err)
			}
			if left = strings.TrimSpace(string(res.Stdout)); left == "" {
				break
			}
		}
		if left != "" {
			t.Errorf("yes still running as %q 5s after the output limit", left)
		}
	})

	t.Run("context cancelled", func(t *testing.T) {
		srv := sshtest.Start(t, sshtest.Options{})
		c := dial(t, srv, optsFor(srv))
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		_, err := c.Run(ctx, transport.Command{Script: "sleep 30", Stdin: strings.NewReader("x")})
		hostErr(t, err, "run")
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v does not wrap context.Canceled", err)
		}
	})

	t.Run("host stops answering", func(t *testing.T) {
		srv := sshtest.Start(t, sshtest.Options{})
		opts := optsFor(srv)
		opts.KeepaliveInterval = 100 * time.Millisecond
		opts.KeepaliveCountMax = 2
		c := dial(t, srv, opts)
		srv.Pause()
		defer srv.Resume()
		errc := make(chan error, 1)
		go func() {
			_, err := c.Run(context.Background(), transport.Command{Script: "true"})
			errc <- err
		}()
		select {
		case err := <-errc:
			he := hostErr(t, err, "timeout")
			if !strings.Contains(he.Error(), "keepalive") {
				t.Errorf("error %q does not mention keepalives", he.Error())
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Run still waiting 5s after the host stopped answering")
		}
	})
}

func TestSSHConfig(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config")
	text := fmt.Sprintf(`# gpuform test config
Host gpu-*
  HostName 127.0.0.1
  User %s
  Port %d
  IdentityFile "%s"
  UserKnownHostsFile %s
  ServerAliveInterval 0
`, srv.User, srv.Port, srv.UserKeyFile, srv.KnownHostsFile)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	base := Options{SSHConfigPath: cfg, Getenv: hermetic(map[string]string{"HOME": dir, "USER": "nobody-here"})}

	c, err := Dial(context.Background(), "gpu-01", base)
	if err != nil {
		t.Fatalf("Dial with settings from ssh_config: %v", err)
	}
	c.Close()

	// An explicit port wins over the file's, as a command-line option does.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().(*net.TCPAddr).Port
	l.Close()
	explicit := base
	explicit.Port = closed
	_, err = Dial(context.Background(), "gpu-01", explicit)
	hostErr(t, err, "connect")

	// A host the file does not match gets none of its settings.
	_, err = Dial(context.Background(), "127.0.0.1", base)
	if err == nil {
		t.Fatal("a host not matched by ssh_config logged in")
	}

	broken := filepath.Join(dir, "broken")
	if err := os.WriteFile(broken, []byte("Host gpu-*\n  Port not-a-port\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := base
	bad.SSHConfigPath = broken
	_, err = Dial(context.Background(), "gpu-01", bad)
	hostErr(t, err, "resolve")
}

func TestEncryptedKeyWithoutAgent(t *testing.T) {
	const passphrase = "correct horse battery staple"
	key := sshtest.NewKey(t)
	pub, err := gossh.NewSignerFromKey(key)
	if err != nil {
		t.Fatal(err)
	}
	srv := sshtest.Start(t, sshtest.Options{AuthorizedKeys: []gossh.PublicKey{pub.PublicKey()}})
	keyFile := filepath.Join(t.TempDir(), "id_ed25519")
	sshtest.WritePrivateKey(t, keyFile, key, passphrase)
	opts := optsFor(srv)
	opts.IdentityFiles = []string{keyFile}

	_, err = Dial(context.Background(), srv.Host, opts)
	he := hostErr(t, err, "auth")
	var enc *EncryptedKeyError
	if !errors.As(err, &enc) {
		t.Fatalf("error %v is not an EncryptedKeyError", err)
	}
	msg := he.Error()
	for _, want := range []string{keyFile, "ssh-add", "passphrase"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	for _, secret := range []string{passphrase, "PRIVATE KEY"} {
		if strings.Contains(msg, secret) {
			t.Errorf("error %q leaks %q", msg, secret)
		}
	}

	// The same key held by an agent logs in, even though the file on disk
	// stays encrypted.
	sock := serveAgent(t, key)
	opts.Getenv = hermetic(map[string]string{"SSH_AUTH_SOCK": sock})
	c := dial(t, srv, opts)
	c.Close()
}

func TestAgentAuth(t *testing.T) {
	key := sshtest.NewKey(t)
	signer, err := gossh.NewSignerFromKey(key)
	if err != nil {
		t.Fatal(err)
	}
	srv := sshtest.Start(t, sshtest.Options{AuthorizedKeys: []gossh.PublicKey{signer.PublicKey()}})
	opts := optsFor(srv)
	opts.IdentityFiles = nil // no key files: HOME is unset too, so no defaults
	opts.Getenv = hermetic(map[string]string{"SSH_AUTH_SOCK": serveAgent(t, key)})
	c := dial(t, srv, opts)
	if _, err := c.Run(context.Background(), transport.Command{Script: "true"}); err != nil {
		t.Fatal(err)
	}
	if !srv.WaitLog(gossh.FingerprintSHA256(signer.PublicKey()), time.Second) {
		t.Errorf("sshd did not log a login with the agent's key")
	}

	t.Run("no agent and no keys", func(t *testing.T) {
		opts.Getenv = hermetic(nil)
		_, err := Dial(context.Background(), srv.Host, opts)
		he := hostErr(t, err, "auth")
		if !strings.Contains(he.Error(), "SSH_AUTH_SOCK") {
			t.Errorf("error %q does not say the agent is missing", he.Error())
		}
	})
	t.Run("agent socket gone", func(t *testing.T) {
		opts.Getenv = hermetic(map[string]string{"SSH_AUTH_SOCK": filepath.Join(t.TempDir(), "gone.sock")})
		_, err := Dial(context.Background(), srv.Host, opts)
		hostErr(t, err, "auth")
	})
	t.Run("key not authorised", func(t *testing.T) {
		opts.Getenv = hermetic(map[string]string{"SSH_AUTH_SOCK": serveAgent(t, sshtest.NewKey(t))})
		_, err := Dial(context.Background(), srv.Host, opts)
		he := hostErr(t, err, "auth")
		if !strings.Contains(he.Error(), "refused all 1 keys") {
			t.Errorf("error %q does not say the key was refused", he.Error())
		}
	})
	t.Run("garbage key file", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "id_bad")
		secret := "-----BEGIN OPENSSH PRIVATE KEY-----\nc2VjcmV0LWJ5dGVz\n-----END OPENSSH PRIVATE KEY-----\n"
		if err := os.WriteFile(bad, []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
		o := optsFor(srv)
		o.IdentityFiles = []string{bad}
		_, err := Dial(context.Background(), srv.Host, o)
		he := hostErr(t, err, "auth")
		if strings.Contains(he.Error(), "c2VjcmV0") {
			t.Errorf("error %q leaks the key file's contents", he.Error())
		}
		if !strings.Contains(he.Error(), bad) {
			t.Errorf("error %q does not name the key file", he.Error())
		}
	})
}

// serveAgent serves an in-process ssh-agent holding keys, in that order,
// on a unix socket.
func serveAgent(t *testing.T, keys ...any) string {
	t.Helper()
	keyring := agent.NewKeyring()
	for _, key := range keys {
		if err := keyring.Add(agent.AddedKey{PrivateKey: key}); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = agent.ServeAgent(keyring, c)
			}()
		}
	}()
	return sock
}

func TestBecomeSudo(t *testing.T) {
	bin := t.TempDir()
	state := t.TempDir()
	// A recording stand-in for sudo: the test machine has no sudo and runs
	// as root. It logs its arguments, and refuses like `sudo -n` does when
	// the state directory says a password is needed.
	fake := `#!/bin/sh
printf '%s\n' "$*" >> ` + transport.Quote(filepath.Join(state, "calls")) + `
if [ -e ` + transport.Quote(filepath.Join(state, "need-password")) + ` ]; then
  echo "sudo: a password is required" >&2
  exit 1
fi
[ "$1" = -n ] && [ "$2" = -- ] || { echo "sudo: unexpected arguments" >&2; exit 99; }
shift 2
exec "$@"
`
	if err := os.WriteFile(filepath.Join(bin, "sudo"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := sshtest.Start(t, sshtest.Options{Env: map[string]string{"PATH": bin + ":/usr/bin:/bin"}})
	opts := optsFor(srv)
	opts.Become = BecomeSudo
	c := dial(t, srv, opts)

	res, err := c.Run(context.Background(), transport.Command{Script: `echo "$X"`, Become: true, Env: map[string]string{"X": "a b"}})
	if err != nil {
		t.Fatalf("Run with sudo: %v", err)
	}
	if string(res.Stdout) != "a b\n" {
		t.Errorf("stdout = %q", res.Stdout)
	}
	calls, _ := os.ReadFile(filepath.Join(state, "calls"))
	if !strings.HasPrefix(string(calls), "-n -- /bin/sh -c ") {
		t.Errorf("sudo was called as %q, want sudo -n -- /bin/sh -c …", calls)
	}

	// Without Become, sudo is not used.
	if _, err := c.Run(context.Background(), transport.Command{Script: "true"}); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(filepath.Join(state, "calls")); !bytes.Equal(again, calls) {
		t.Errorf("a command without Become went through sudo")
	}

	if err := os.WriteFile(filepath.Join(state, "need-password"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = c.Run(context.Background(), transport.Command{Script: "true", Become: true})
	he := hostErr(t, err, "auth")
	var sp *SudoPasswordError
	if !errors.As(err, &sp) || !strings.Contains(he.Error(), "NOPASSWD") {
		t.Errorf("error %v does not explain the sudo password prompt", err)
	}

	t.Run("sudo not installed", func(t *testing.T) {
		// An empty PATH: no sudo, whatever this machine has installed.
		bare := sshtest.Start(t, sshtest.Options{Env: map[string]string{"PATH": t.TempDir()}})
		opts := optsFor(bare)
		opts.Become = BecomeSudo
		c := dial(t, bare, opts)
		_, err := c.Run(context.Background(), transport.Command{Script: "true", Become: true})
		he := hostErr(t, err, "run")
		if !strings.Contains(he.Error(), "sudo is not installed") {
			t.Errorf("error %q does not say sudo is missing", he.Error())
		}
	})
}

func TestKnownHostsVariants(t *testing.T) {
	srv := sshtest.Start(t, sshtest.Options{})

	t.Run("revoked key", func(t *testing.T) {
		kh := filepath.Join(t.TempDir(), "known_hosts")
		content := srv.KnownHostsLine + "\n@revoked * " + string(gossh.MarshalAuthorizedKey(srv.HostPublicKey))
		if err := os.WriteFile(kh, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		opts := optsFor(srv)
		opts.KnownHostsFiles = []string{kh}
		opts.AcceptNewHostKeys = true
		_, err := Dial(context.Background(), srv.Host, opts)
		hostErr(t, err, "host key")
		var rev *RevokedHostKeyError
		if !errors.As(err, &rev) || rev.Revoked.Line != 2 {
			t.Errorf("error %v is not a RevokedHostKeyError naming line 2", err)
		}
	})

	t.Run("hashed when ssh_config says HashKnownHosts", func(t *testing.T) {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "config")
		if err := os.WriteFile(cfg, []byte("Host *\n  HashKnownHosts yes\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		kh := filepath.Join(dir, "known_hosts")
		opts := optsFor(srv)
		opts.SSHConfigPath = cfg
		opts.KnownHostsFiles = []string{kh}
		opts.AcceptNewHostKeys = true
		dial(t, srv, opts).Close()
		data, err := os.ReadFile(kh)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(data), "|1|") || strings.Contains(string(data), "127.0.0.1") {
			t.Errorf("known_hosts line is not hashed: %q", data)
		}
		opts.AcceptNewHostKeys = false
		dial(t, srv, opts).Close()
	})

	t.Run("keepalives answered keep the connection", func(t *testing.T) {
		opts := optsFor(srv)
		// Several keepalives go out and come back during the sleep; the
		// margins allow for a loaded test machine.
		opts.KeepaliveInterval = 100 * time.Millisecond
		opts.KeepaliveCountMax = 5
		c := dial(t, srv, opts)
		time.Sleep(700 * time.Millisecond)
		if _, err := c.Run(context.Background(), transport.Command{Script: "true"}); err != nil {
			t.Errorf("Run after keepalives: %v", err)
		}
	})

	t.Run("target refused behind a bastion", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := l.Addr().(*net.TCPAddr).Port
		l.Close()
		opts := optsFor(srv)
		opts.Port = closed
		opts.ProxyJump = []string{srv.User + "@" + srv.Addr}
		_, err = Dial(context.Background(), "127.0.0.1", opts)
		he := hostErr(t, err, "connect")
		if !strings.Contains(he.Error(), "via 127.0.0.1") {
			t.Errorf("error %q does not say which bastion it went through", he.Error())
		}
	})
}

func TestIdentitiesOnly(t *testing.T) {
	good := sshtest.NewKey(t)
	goodSigner, err := gossh.NewSignerFromKey(good)
	if err != nil {
		t.Fatal(err)
	}
	// sshd gives up after two refused keys, as a server with a low
	// MaxAuthTries does with an agent full of keys.
	srv := sshtest.Start(t, sshtest.Options{
		AuthorizedKeys: []gossh.PublicKey{goodSigner.PublicKey()},
		ExtraConfig:    []string{"MaxAuthTries 2"},
	})
	sock := serveAgent(t, sshtest.NewKey(t), sshtest.NewKey(t), sshtest.NewKey(t), good)
	dir := t.TempDir()
	// Only the public half on disk: the agent holds the private key.
	pubFile := filepath.Join(dir, "id_good.pub")
	if err := os.WriteFile(pubFile, gossh.MarshalAuthorizedKey(goodSigner.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, only := range []string{"yes", "no"} {
		t.Run("IdentitiesOnly "+only, func(t *testing.T) {
			cfg := filepath.Join(dir, "config-"+only)
			text := fmt.Sprintf("Host *\n  IdentityFile %s\n  IdentitiesOnly %s\n", filepath.Join(dir, "id_good"), only)
			if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			opts := optsFor(srv)
			opts.IdentityFiles = nil
			opts.SSHConfigPath = cfg
			opts.Getenv = hermetic(map[string]string{"SSH_AUTH_SOCK": sock})
			c, err := Dial(context.Background(), srv.Host, opts)
			if only == "yes" {
				if err != nil {
					t.Fatalf("Dial: %v", err)
				}
				c.Close()
				return
			}
			// Without it the three wrong keys come first and use up the
			// server's tries: this is what IdentitiesOnly is for.
			if err == nil {
				c.Close()
				t.Fatal("Dial succeeded although sshd allows two tries and the right key was fourth")
			}
			he := hostErr(t, err, "auth")
			if !strings.Contains(he.Error(), "IdentitiesOnly") {
				t.Errorf("error %q does not suggest IdentitiesOnly", he.Error())
			}
		})
	}
}
