package sshtest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// startTimeout bounds how long Start waits for sshd to print its banner. A
// loaded 2-core CI machine starts sshd in well under a second; ten seconds
// only matters when something is wrong, and then the log says what.
const startTimeout = 10 * time.Second

// Options changes how the server is set up. The zero value is a working
// server on a free port with fresh keys.
type Options struct {
	// Port to listen on; 0 picks a free one. Set it to restart a "host" on
	// the same address, for example with a different HostKey.
	Port int
	// HostKey is the server's ed25519 host key; nil generates one.
	HostKey ed25519.PrivateKey
	// HostCA, when set, signs a host certificate for HostKey with principals
	// 127.0.0.1 and localhost, which sshd then offers (HostCertificate), so
	// that clients can verify it with an @cert-authority known_hosts line.
	HostCA gossh.Signer
	// AuthorizedKeys are authorised to log in in addition to the generated
	// user key (for example keys held by an in-process ssh-agent).
	AuthorizedKeys []gossh.PublicKey
	// UserKey is the key written to UserKeyFile and authorised to log in;
	// nil generates one. Tests that start several servers share one this way.
	UserKey ed25519.PrivateKey
	// Env is set in every session (sshd's SetEnv), after HOME, which is
	// always a fresh directory (see Server.Home). Use it, for example, to
	// put recording stand-ins first: Env: {"PATH": bin + ":/usr/bin:/bin"}.
	Env map[string]string
	// ExtraConfig lines are appended to sshd_config as written, for example
	// "MaxSessions 2". sshd honours only its first SetEnv line: use Env.
	ExtraConfig []string
}

// Server is one running sshd. Its fields are what a client needs to log in.
type Server struct {
	// Host is the address sshd listens on: always 127.0.0.1.
	Host string
	// Port is the TCP port sshd listens on.
	Port int
	// Addr is Host:Port, ready for net.Dial.
	Addr string
	// User is the account to log in as: the user running the tests.
	User string
	// UserKeyFile is an unencrypted OpenSSH private key authorised to log in.
	UserKeyFile string
	// UserKey is the private key in UserKeyFile.
	UserKey ed25519.PrivateKey
	// UserSigner signs with UserKey, for clients built in the test itself.
	UserSigner gossh.Signer
	// HostKey is the server's private host key.
	HostKey ed25519.PrivateKey
	// HostPublicKey is the server's public host key.
	HostPublicKey gossh.PublicKey
	// KnownHostsLine is the known_hosts line for this server:
	// "[127.0.0.1]:PORT ssh-ed25519 AAAA…".
	KnownHostsLine string
	// KnownHostsFile is a file in Dir holding KnownHostsLine and a newline.
	KnownHostsFile string
	// Dir is the server's private directory (keys, config, pid file).
	Dir string
	// ConfigFile is the sshd_config the server runs with.
	ConfigFile string
	// Home is HOME in every session: an empty directory in Dir. The login
	// user's real home is not used, because Debian's bash reads ~/.bashrc
	// for every ssh command, and whatever the machine's rc files do (print,
	// take locks, take seconds) must not leak into the tests.
	Home string

	t       testing.TB
	cmd     *exec.Cmd
	exited  chan struct{}
	log     *LockedBuffer
	mu      sync.Mutex
	paused  []int
	stopped bool
}

// Start starts sshd and waits until it answers with its SSH banner. It fails
// the test (or skips it, outside CI, when sshd is not installed) on any
// problem, and registers a cleanup that stops the server.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	sshd := findSSHD(t)
	username := currentUser(t)
	dir := t.TempDir()

	hostKey := opts.HostKey
	if hostKey == nil {
		hostKey = newKey(t)
	}
	userKey := opts.UserKey
	if userKey == nil {
		userKey = newKey(t)
	}
	hostSigner, err := gossh.NewSignerFromKey(hostKey)
	if err != nil {
		t.Fatalf("sshtest: host key: %v", err)
	}
	userSigner, err := gossh.NewSignerFromKey(userKey)
	if err != nil {
		t.Fatalf("sshtest: user key: %v", err)
	}

	s := &Server{
		Host:          "127.0.0.1",
		User:          username,
		UserKey:       userKey,
		UserSigner:    userSigner,
		HostKey:       hostKey,
		HostPublicKey: hostSigner.PublicKey(),
		Dir:           dir,
		ConfigFile:    filepath.Join(dir, "sshd_config"),
		UserKeyFile:   filepath.Join(dir, "id_ed25519"),
		Home:          filepath.Join(dir, "home"),
		t:             t,
		log:           &LockedBuffer{},
	}
	if err := os.Mkdir(s.Home, 0o700); err != nil {
		t.Fatalf("sshtest: %v", err)
	}
	hostKeyFile := filepath.Join(dir, "ssh_host_ed25519_key")
	writePrivateKey(t, hostKeyFile, hostKey)
	writePrivateKey(t, s.UserKeyFile, userKey)
	writeFile(t, s.UserKeyFile+".pub", gossh.MarshalAuthorizedKey(userSigner.PublicKey()))

	var authorized bytes.Buffer
	authorized.Write(gossh.MarshalAuthorizedKey(userSigner.PublicKey()))
	for _, k := range opts.AuthorizedKeys {
		authorized.Write(gossh.MarshalAuthorizedKey(k))
	}
	authorizedFile := filepath.Join(dir, "authorized_keys")
	writeFile(t, authorizedFile, authorized.Bytes())

	var certLine string
	if opts.HostCA != nil {
		certFile := hostKeyFile + "-cert.pub"
		cert := &gossh.Certificate{
			Key:             hostSigner.PublicKey(),
			CertType:        gossh.HostCert,
			KeyId:           "sshtest host",
			ValidPrincipals: []string{"127.0.0.1", "localhost"},
			ValidBefore:     gossh.CertTimeInfinity,
		}
		if err := cert.SignCert(rand.Reader, opts.HostCA); err != nil {
			t.Fatalf("sshtest: sign host certificate: %v", err)
		}
		writeFile(t, certFile, gossh.MarshalAuthorizedKey(cert))
		certLine = "HostCertificate " + certFile
	}

	staticConfig := []string{
		"ListenAddress 127.0.0.1",
		"HostKey " + hostKeyFile,
		certLine,
		"PidFile " + filepath.Join(dir, "sshd.pid"),
		"AuthorizedKeysFile " + authorizedFile,
		// The temp dir's modes are not what StrictModes expects of ~/.ssh.
		"StrictModes no",
		// PAM would need a service file and may prompt; keys are all we test.
		"UsePAM no",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PubkeyAuthentication yes",
		"PermitRootLogin prohibit-password",
		// ProxyJump (direct-tcpip) goes through the bastion's forwarding.
		"AllowTcpForwarding yes",
		"AllowAgentForwarding no",
		"X11Forwarding no",
		"PrintMotd no",
		"PrintLastLog no",
		"UseDNS no",
		// VERBOSE logs logins and session starts, which Logins and Sessions count.
		"LogLevel VERBOSE",
		// Fleet benchmarks open dozens of connections at once; the default
		// MaxStartups 10:30:100 would drop some of them at random.
		"MaxStartups 1000",
		"MaxSessions 100",
		setEnv(s.Home, opts.Env),
	}
	staticConfig = append(staticConfig, opts.ExtraConfig...)
	s.KnownHostsFile = filepath.Join(dir, "known_hosts")

	port := opts.Port
	for attempt := 1; ; attempt++ {
		if port == 0 {
			port = FreePort(t)
		}
		s.setPort(port)
		config := append([]string{"Port " + strconv.Itoa(port)}, staticConfig...)
		writeFile(t, s.ConfigFile, []byte(strings.Join(config, "\n")+"\n"))
		err := s.start(sshd)
		if err == nil {
			break
		}
		log := s.log.String()
		s.log.Reset()
		switch {
		case attempt >= 5:
			t.Fatalf("sshtest: %v\nsshd log:\n%s", err, log)
		case os.Geteuid() == 0 && privsepRE.MatchString(log):
			// As root, sshd needs its privilege-separation directory,
			// which only the distribution's service unit creates.
			dir, _ := missingPrivsepDir(log)
			if mkErr := os.MkdirAll(dir, 0o755); mkErr != nil {
				t.Fatalf("sshtest: create sshd privilege-separation directory %s: %v", dir, mkErr)
			}
		case opts.Port == 0 && strings.Contains(log, "Address already in use"):
			// Another test took the free port between our probe and
			// sshd's bind (tests running in parallel); pick another.
			port = 0
		default:
			t.Fatalf("sshtest: %v\nsshd log:\n%s", err, log)
		}
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("sshd %s log:\n%s", s.Addr, s.Log())
		}
	})
	return s
}

// setEnv renders the one SetEnv line sshd honours.
func setEnv(home string, env map[string]string) string {
	vars := map[string]string{"HOME": home}
	for k, v := range env {
		vars[k] = v
	}
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	line := "SetEnv"
	for _, k := range names {
		line += " " + strconv.Quote(k+"="+vars[k])
	}
	return line
}

// setPort sets the fields that depend on the port and writes the
// known_hosts file.
func (s *Server) setPort(port int) {
	s.Port = port
	s.Addr = net.JoinHostPort(s.Host, strconv.Itoa(port))
	s.KnownHostsLine = knownhosts.Line([]string{knownhosts.Normalize(s.Addr)}, s.HostPublicKey)
	writeFile(s.t, s.KnownHostsFile, []byte(s.KnownHostsLine+"\n"))
}

var privsepRE = regexp.MustCompile(`Missing privilege separation directory: (\S+)`)

func missingPrivsepDir(log string) (string, bool) {
	m := privsepRE.FindStringSubmatch(log)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// start runs sshd and waits for its banner.
func (s *Server) start(sshd string) error {
	// sshd re-executes itself for every connection and insists on an
	// absolute path to do so.
	cmd := exec.Command(sshd, "-D", "-e", "-f", s.ConfigFile)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	// stderr is a pipe we read ourselves rather than an io.Writer: sshd's
	// connection processes inherit it and may outlive the listener, and
	// exec.Cmd.Wait would wait for them to close it.
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdout = w
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return fmt.Errorf("start %s: %w", sshd, err)
	}
	w.Close()
	go func() {
		_, _ = io.Copy(s.log, r)
		r.Close()
	}()
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd = cmd
	s.exited = exited
	s.stopped = false
	s.mu.Unlock()

	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			// Give the log reader a moment to drain what sshd said.
			time.Sleep(50 * time.Millisecond)
			return fmt.Errorf("sshd exited during start-up")
		default:
		}
		// The log line proves that this sshd bound the port; the banner,
		// that it answers. A banner alone could come from another
		// process that holds the port.
		if strings.Contains(s.log.String(), fmt.Sprintf("Server listening on %s port %d.", s.Host, s.Port)) && bannerOK(s.Addr) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.kill(syscall.SIGKILL)
	return fmt.Errorf("sshd did not answer on %s within %s", s.Addr, startTimeout)
}

// bannerOK reports whether something at addr speaks SSH.
func bannerOK(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 8)
	if _, err := io.ReadFull(c, buf); err != nil {
		return false
	}
	return string(buf) == "SSH-2.0-"
}

// Stop ends every process of the server (the listener and each connection's
// sshd, and what they run) and waits for the listener to exit. Clients see
// their connections close. It is safe to call more than once.
func (s *Server) Stop() {
	s.kill(syscall.SIGKILL)
}

// Kill ends the server's sshd processes abruptly, mid-command, the way a
// crashed or rebooted host does: the connection processes die first so
// clients see a dropped connection rather than a finished command. Commands
// they ran are then killed too, so nothing outlives the test.
func (s *Server) Kill() {
	s.kill(syscall.SIGKILL)
}

func (s *Server) kill(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.stopped {
		return
	}
	s.stopped = true
	root := s.cmd.Process.Pid
	sshds, others := processTree(root)
	for _, pid := range sshds {
		_ = syscall.Kill(pid, sig)
	}
	for _, pid := range others {
		_ = syscall.Kill(pid, sig)
	}
	// A stopped process does not act on SIGKILL until continued on some
	// kernels' accounting of it; continue them so they die now.
	for _, pid := range s.paused {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	s.paused = nil
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		s.t.Errorf("sshtest: sshd %d did not exit after %v", root, sig)
	}
}

// Restart starts the server again on the same port with the same keys and
// configuration after Stop or Kill.
func (s *Server) Restart() {
	s.t.Helper()
	s.log.Reset()
	if err := s.start(findSSHD(s.t)); err != nil {
		s.t.Fatalf("sshtest: restart: %v\nsshd log:\n%s", err, s.log.String())
	}
}

// Pause stops (SIGSTOP) every sshd process of the server, so that
// connections stay open but nothing answers: what a hung host or a silently
// dropped network looks like to a client. Resume undoes it; Stop and Kill
// also work on a paused server.
func (s *Server) Pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.stopped {
		return
	}
	sshds, _ := processTree(s.cmd.Process.Pid)
	for _, pid := range sshds {
		if syscall.Kill(pid, syscall.SIGSTOP) == nil {
			s.paused = append(s.paused, pid)
		}
	}
}

// Resume continues the processes stopped by Pause.
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, pid := range s.paused {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	s.paused = nil
}

// Log returns what sshd has logged so far (LogLevel VERBOSE).
func (s *Server) Log() string { return s.log.String() }

var (
	loginRE   = regexp.MustCompile(`(?m)^.*Accepted publickey for `)
	sessionRE = regexp.MustCompile(`(?m)^.*Starting session: `)
)

// Logins counts successful logins (one per client connection) in sshd's log
// since the server (re)started.
func (s *Server) Logins() int { return len(loginRE.FindAllStringIndex(s.Log(), -1)) }

// Sessions counts sessions that ran a command (one per exec request) in
// sshd's log since the server (re)started. A transport that reuses its
// connection shows Logins()==1 and Sessions()==commands run.
func (s *Server) Sessions() int { return len(sessionRE.FindAllStringIndex(s.Log(), -1)) }

// WaitLog waits up to d for sshd's log to contain substr, since sshd may
// write a line just after the client saw the effect. It reports whether the
// line appeared.
func (s *Server) WaitLog(substr string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if strings.Contains(s.Log(), substr) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// NewKey returns a fresh ed25519 private key, for Options.HostKey,
// Options.UserKey or a certificate authority.
func NewKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	return newKey(t)
}

// WritePrivateKey writes key to path as an OpenSSH private key (mode 0600),
// encrypted with passphrase unless it is empty.
func WritePrivateKey(t testing.TB, path string, key ed25519.PrivateKey, passphrase string) {
	t.Helper()
	var block *pem.Block
	var err error
	if passphrase == "" {
		block, err = gossh.MarshalPrivateKey(key, "")
	} else {
		block, err = gossh.MarshalPrivateKeyWithPassphrase(key, "", []byte(passphrase))
	}
	if err != nil {
		t.Fatalf("sshtest: marshal key: %v", err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatalf("sshtest: %v", err)
	}
}

func newKey(t testing.TB) ed25519.PrivateKey {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("sshtest: generate key: %v", err)
	}
	return priv
}

func writePrivateKey(t testing.TB, path string, key ed25519.PrivateKey) {
	t.Helper()
	WritePrivateKey(t, path, key, "")
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatalf("sshtest: %v", err)
	}
}

// findSSHD returns sshd's absolute path, or skips/fails the test when it is
// not installed (see the package documentation).
func findSSHD(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/sbin/sshd", "/usr/local/sbin/sshd"} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
	}
	if p, err := exec.LookPath("sshd"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	Missing(t, "sshtest: OpenSSH sshd not found: install openssh-server (apt-get install openssh-server / dnf install openssh-server)")
	return ""
}

// Missing ends a test that lacks something it needs from the machine: it
// fails in CI (CI set and not "false" or "0"), where scripts/test.sh
// installs everything and a skip would hide a test that never ran, and
// skips elsewhere.
func Missing(t testing.TB, why string) {
	t.Helper()
	if ci := os.Getenv("CI"); ci != "" && ci != "false" && ci != "0" {
		t.Fatal(why)
	}
	t.Skip(why)
}

func currentUser(t testing.TB) string {
	t.Helper()
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	t.Fatalf("sshtest: cannot tell the current user's name")
	return ""
}

// processTree returns the sshd processes in the tree rooted at root (root
// included) and the other processes in it (the commands sshd runs). sshd's
// connection processes call setsid(), so a process group does not hold
// them; the parent links in /proc do.
func processTree(root int) (sshds, others []int) {
	children := map[int][]int{}
	comm := map[int]string{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return []int{root}, nil
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		name, ppid, ok := parseStat(stat)
		if !ok {
			continue
		}
		children[ppid] = append(children[ppid], pid)
		comm[pid] = name
	}
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if pid == root || comm[pid] == "sshd" {
			sshds = append(sshds, pid)
		} else {
			others = append(others, pid)
		}
		queue = append(queue, children[pid]...)
	}
	return sshds, others
}

// parseStat reads the command name and parent pid from /proc/PID/stat:
// "PID (COMM) STATE PPID …", where COMM may itself hold spaces and parens.
func parseStat(stat []byte) (string, int, bool) {
	open := bytes.IndexByte(stat, '(')
	closeIdx := bytes.LastIndexByte(stat, ')')
	if open < 0 || closeIdx < open {
		return "", 0, false
	}
	fields := strings.Fields(string(stat[closeIdx+1:]))
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return "", 0, false
	}
	return string(stat[open+1 : closeIdx]), ppid, true
}

// LockedBuffer is a bytes.Buffer that one goroutine (sshd's log reader, a
// child process) writes while a test reads it.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *LockedBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}
