package ssh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	gossh "golang.org/x/crypto/ssh"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/provision/transport"
)

// Client is an open, verified and authenticated connection to one host. It
// implements transport.Transport; every Run opens a new session on the same
// connection. It is safe for concurrent use; at most 8 commands run at once
// on one connection (sshd's MaxSessions defaults to 10), others wait.
type Client struct {
	host           string
	become         string
	commandTimeout time.Duration

	client *gossh.Client
	hops   []*gossh.Client // jump hosts, nearest first

	closed    chan struct{}
	closeOnce sync.Once

	// sessions bounds concurrent Runs. sshd refuses sessions beyond its
	// MaxSessions (default 10) on one connection; stop needs one more.
	sessions chan struct{}

	dead     chan struct{} // closed when the connection is known to be gone
	deadOnce sync.Once
	deadErr  *transport.HostError
}

var _ transport.Transport = (*Client)(nil)

// maxConcurrentSessions is how many Runs may be under way on one
// connection at once; more wait. It stays below OpenSSH's default
// MaxSessions of 10, leaving room for the session that stops a cancelled
// command.
const maxConcurrentSessions = 8

// Dialer makes the connections of one run. It reads ssh_config once and
// caches parsed key files, so a fleet of hundreds of hosts does not parse
// them hundreds of times. It is safe for concurrent use.
type Dialer struct {
	opts  Options
	env   env
	cfg   *sshConfig
	files *keyFileCache
}

// NewDialer checks opts and reads the ssh_config file. Its error concerns
// every host (a malformed config, an unknown become method), so it is a
// plain error, not a HostError.
func NewDialer(opts Options) (*Dialer, error) {
	if opts.Become != "" && opts.Become != BecomeSudo {
		return nil, fmt.Errorf("unsupported become method %q (only %q is)", opts.Become, BecomeSudo)
	}
	e := newEnv(opts.Getenv)
	cfg, err := loadConfig(opts.SSHConfigPath, e)
	if err != nil {
		return nil, err
	}
	return &Dialer{opts: opts, env: e, cfg: cfg, files: &keyFileCache{files: map[string]parsedKey{}}}, nil
}

// Dial connects to host ("alias", "host", "user@host:port") through any
// jump hosts, verifies every host key and logs in. It is NewDialer followed
// by Dialer.Dial; use a Dialer for many hosts. It returns a
// *transport.HostError on failure.
func Dial(ctx context.Context, host string, opts Options) (*Client, error) {
	d, err := NewDialer(opts)
	if err != nil {
		return nil, &transport.HostError{Host: host, Op: "resolve", Err: err}
	}
	return d.Dial(ctx, host)
}

// Dial connects to host as the package-level Dial does. It returns a
// *transport.HostError on failure.
func (d *Dialer) Dial(ctx context.Context, host string) (*Client, error) {
	hostErr := func(op string, err error) error {
		return &transport.HostError{Host: host, Op: op, Err: err}
	}
	opts := d.opts
	r := &resolver{opts: opts, cfg: d.cfg, env: d.env}
	target, err := r.resolve(host, true)
	if err != nil {
		return nil, hostErr("resolve", err)
	}
	chain, err := r.chain(target.proxyJump, 0)
	if err != nil {
		return nil, hostErr("resolve", err)
	}
	chain = append(chain, target)

	keys := newKeyring(ctx, d.files)
	defer keys.Close()

	var clients []*gossh.Client
	closeAll := func() {
		for i := len(clients) - 1; i >= 0; i-- {
			clients[i].Close()
		}
	}
	for i, ep := range chain {
		var via *gossh.Client
		if i > 0 {
			via = clients[i-1]
		}
		c, op, err := connect(ctx, ep, via, keys)
		if err != nil {
			closeAll()
			if i < len(chain)-1 {
				err = fmt.Errorf("jump host %s: %w", ep.alias, err)
			} else if via != nil {
				err = fmt.Errorf("via %s: %w", chain[i-1].alias, err)
			}
			return nil, hostErr(op, err)
		}
		clients = append(clients, c)
	}

	c := &Client{
		host:           host,
		become:         opts.Become,
		commandTimeout: opts.CommandTimeout,
		client:         clients[len(clients)-1],
		hops:           clients[:len(clients)-1],
		closed:         make(chan struct{}),
		dead:           make(chan struct{}),
		sessions:       make(chan struct{}, maxConcurrentSessions),
	}
	go func() {
		err := c.client.Wait()
		if err == nil {
			err = errors.New("connection closed by the server")
		}
		c.markDead("run", fmt.Errorf("connection lost: %w", err))
	}()
	if target.keepalive > 0 {
		go c.keepalive(target.keepalive, target.keepaliveMax)
	}
	return c, nil
}

// connect opens one hop: TCP (directly or through via), handshake with host
// key verification, authentication. It returns the HostError op to use on
// failure.
func connect(ctx context.Context, ep endpoint, via *gossh.Client, keys *keyring) (*gossh.Client, string, error) {
	address := ep.address()
	hk := newHostKeys(ep)
	callback, algos, err := hk.callback(address)
	if err != nil {
		return nil, "host key", err
	}
	var hostKeyErr error
	config := &gossh.ClientConfig{
		User: ep.user,
		HostKeyCallback: func(hostname string, remote net.Addr, key gossh.PublicKey) error {
			err := callback(hostname, remote, key)
			hostKeyErr = err
			return err
		},
		HostKeyAlgorithms: algos,
		ClientVersion:     "SSH-2.0-gpuform",
	}

	cctx, cancel := context.WithTimeout(ctx, ep.connectTimeout)
	defer cancel()
	timeoutOp := func(err error) (string, error) {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "timeout", ctx.Err()
		}
		if ctx.Err() != nil {
			return "connect", ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) || cctx.Err() != nil {
			return "timeout", fmt.Errorf("connect to %s: no answer within %s: %w", address, ep.connectTimeout, context.DeadlineExceeded)
		}
		return "", nil
	}

	var conn net.Conn
	if via == nil {
		var d net.Dialer
		conn, err = d.DialContext(cctx, "tcp", address)
	} else {
		conn, err = via.DialContext(cctx, "tcp", address)
	}
	if err != nil {
		if op, terr := timeoutOp(err); op != "" {
			return nil, op, terr
		}
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) {
			return nil, "resolve", resolveError(ep.hostname, dnsErr)
		}
		return nil, "connect", err
	}
	// As ssh does, the name is resolved and the host reached before any
	// key is looked for: a mistyped host is reported as such, not as a
	// missing key.
	auth := keys.forEndpoint(ep)
	if len(auth.signers) == 0 {
		conn.Close()
		return nil, "auth", auth.failure(ep, nil)
	}
	config.Auth = []gossh.AuthMethod{gossh.PublicKeys(auth.signers...)}

	type result struct {
		conn  gossh.Conn
		chans <-chan gossh.NewChannel
		reqs  <-chan *gossh.Request
		err   error
	}
	done := make(chan result, 1)
	go func() {
		c, chans, reqs, err := gossh.NewClientConn(conn, address, config)
		done <- result{c, chans, reqs, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-cctx.Done():
		// Closing the connection makes the handshake return at once.
		conn.Close()
		res = <-done
		if res.err == nil {
			res.conn.Close()
		}
		op, err := timeoutOp(cctx.Err())
		return nil, op, err
	}
	if res.err != nil {
		conn.Close()
		switch {
		case hostKeyErr != nil:
			return nil, "host key", hostKeyErr
		case strings.Contains(res.err.Error(), "unable to authenticate"):
			return nil, "auth", auth.failure(ep, nil)
		case strings.Contains(res.err.Error(), "Too many authentication failures"):
			auth.notes = append(auth.notes, "the server hung up after too many refused keys (its MaxAuthTries); "+
				"name the right key with IdentityFile and set IdentitiesOnly yes for this host in ssh config")
			return nil, "auth", auth.failure(ep, nil)
		default:
			return nil, "connect", fmt.Errorf("ssh handshake with %s: %w", address, res.err)
		}
	}
	return gossh.NewClient(res.conn, res.chans, res.reqs), "", nil
}

// resolveError words a failed look-up as ssh does ("Could not resolve
// hostname X: Name or service not known"), with glibc's texts for the
// common causes, so that it reads the same as the ssh the operator tried.
func resolveError(host string, err *net.DNSError) error {
	reason := err.Err
	switch {
	case err.IsNotFound:
		reason = "Name or service not known"
	case err.IsTimeout, err.IsTemporary:
		reason = "Temporary failure in name resolution"
	}
	return fmt.Errorf("Could not resolve hostname %s: %s", host, reason) //nolint:staticcheck // OpenSSH's own words, capital included
}

// keepalive sends keepalive@openssh.com requests every interval and closes
// the connection after max unanswered ones in a row, so that commands on a
// host that vanished end with an error instead of waiting forever.
func (c *Client) keepalive(interval time.Duration, max int) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	missed := 0
	for {
		select {
		case <-c.closed:
			return
		case <-c.dead:
			return
		case <-ticker.C:
		}
		reply := make(chan error, 1)
		go func() {
			// sshd answers unknown global requests with a failure, which
			// proves it is alive just as well.
			_, _, err := c.client.SendRequest("keepalive@openssh.com", true, nil)
			reply <- err
		}()
		select {
		case err := <-reply:
			if err != nil {
				c.markDead("run", fmt.Errorf("connection lost: %w", err))
				return
			}
			missed = 0
		case <-time.After(interval):
			missed++
			if missed >= max {
				c.markDead("timeout", fmt.Errorf("host stopped answering: %d keepalives %s apart went unanswered", missed, interval))
				c.client.Close()
				return
			}
		case <-c.closed:
			return
		}
	}
}

func (c *Client) markDead(op string, err error) {
	c.deadOnce.Do(func() {
		c.deadErr = &transport.HostError{Host: c.host, Op: op, Err: err}
		close(c.dead)
	})
}

// Host returns the host name as given to Dial.
func (c *Client) Host() string { return c.host }

// Close closes the connection and those to the jump hosts. It is safe to
// call more than once.
func (c *Client) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		err = c.client.Close()
		for i := len(c.hops) - 1; i >= 0; i-- {
			c.hops[i].Close()
		}
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
	})
	return err
}

// commandTimeoutError is the cause of a context ended by CommandTimeout.
type commandTimeoutError struct{ d time.Duration }

func (e *commandTimeoutError) Error() string {
	return fmt.Sprintf("command did not finish within %s", e.d)
}

// Unwrap makes errors.Is(err, context.DeadlineExceeded) hold.
func (e *commandTimeoutError) Unwrap() error { return context.DeadlineExceeded }

// Run runs cmd in a new session on the connection. A non-zero exit status
// is reported in Result.ExitCode, not as an error.
func (c *Client) Run(ctx context.Context, cmd transport.Command) (transport.Result, error) {
	select {
	case <-c.dead:
		return transport.Result{}, c.deadErr
	case <-c.closed:
		return transport.Result{}, c.hostErr("run", errors.New("connection already closed"))
	default:
	}
	script, stdin, err := buildCommand(cmd, c.become)
	if err != nil {
		return transport.Result{}, c.hostErr("run", err)
	}
	if c.commandTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.commandTimeout, &commandTimeoutError{c.commandTimeout})
		defer cancel()
	}
	if ctx.Err() != nil {
		return transport.Result{}, c.ctxErr(ctx)
	}
	select {
	case c.sessions <- struct{}{}:
		defer func() { <-c.sessions }()
	case <-ctx.Done():
		return transport.Result{}, c.ctxErr(ctx)
	case <-c.dead:
		return transport.Result{}, c.deadErr
	}

	stdout, stderr := transport.NewStdout(), transport.NewStderr()
	pids := newPIDFilter(stderr)
	type started struct {
		sess *gossh.Session
		err  error
	}
	startCh := make(chan started, 1)
	waitCh := make(chan error, 1)
	// The command line is the goroutine's argument, not a variable it
	// shares with Run: it is no longer reachable once sent, rather than
	// held for as long as the command runs.
	go func(script string) {
		sess, err := c.client.NewSession()
		if err != nil {
			startCh <- started{err: fmt.Errorf("open session: %w", err)}
			return
		}
		// x/crypto's Session.Wait closes its side of a Stdin copy once the
		// command exits, so a stdin that never ends (a terminal, an open
		// pipe) does not hold Run; TestRun checks it. A script on standard
		// input is written to the channel as it is, without the pipe and
		// the 32 kB buffer of that copy.
		in, own := stdin.(*scriptInput)
		var w io.WriteCloser
		if own {
			if w, err = sess.StdinPipe(); err != nil {
				sess.Close()
				startCh <- started{err: fmt.Errorf("open standard input: %w", err)}
				return
			}
		} else {
			sess.Stdin = stdin
		}
		sess.Stdout = stdout
		sess.Stderr = pids
		if err := sess.Start(script); err != nil {
			sess.Close()
			startCh <- started{err: fmt.Errorf("start command: %w", err)}
			return
		}
		if own {
			// The node's window (2 MB from OpenSSH) takes a script at
			// once; a session that ends first fails the write.
			go func() {
				_, _ = in.WriteTo(w)
				w.Close()
			}()
		}
		startCh <- started{sess: sess}
		waitCh <- sess.Wait()
	}(script)

	var sess *gossh.Session
	select {
	case st := <-startCh:
		if st.err != nil {
			if c.isDead() {
				return transport.Result{}, c.deadErr
			}
			return transport.Result{}, c.hostErr("run", st.err)
		}
		sess = st.sess
	case <-ctx.Done():
		// The session may still open; end it when it does.
		go func() {
			if st := <-startCh; st.sess != nil {
				c.stop(st.sess, pids)
			}
		}()
		return transport.Result{}, c.ctxErr(ctx)
	case <-c.dead:
		return transport.Result{}, c.deadErr
	}

	var waitErr error
	select {
	case waitErr = <-waitCh:
	case <-ctx.Done():
		c.stop(sess, pids)
		return transport.Result{}, c.ctxErr(ctx)
	case <-stdout.Overflow():
		c.stop(sess, pids)
		return transport.Result{ExitCode: -1}, c.hostErr("output", stdout.Err())
	case <-stderr.Overflow():
		c.stop(sess, pids)
		return transport.Result{ExitCode: -1}, c.hostErr("output", stderr.Err())
	case <-c.dead:
		sess.Close()
		return transport.Result{}, c.deadErr
	}
	sess.Close()
	pids.flush()
	// The command may have ended just as it passed a limit.
	if err := transport.FirstOverflow(stdout, stderr); err != nil {
		return transport.Result{ExitCode: -1}, c.hostErr("output", err)
	}

	res := transport.Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	var exitErr *gossh.ExitError
	var missing *gossh.ExitMissingError
	switch {
	case waitErr == nil:
	case errors.As(waitErr, &exitErr):
		res.ExitCode = exitErr.ExitStatus()
		if exitErr.Signal() != "" {
			res.ExitCode = -1
		}
	case errors.As(waitErr, &missing):
		if c.waitDead(100 * time.Millisecond) {
			return res, c.deadErr
		}
		return res, c.hostErr("run", errors.New("connection lost while the command was running (no exit status)"))
	default:
		if c.waitDead(100 * time.Millisecond) {
			return res, c.deadErr
		}
		return res, c.hostErr("run", waitErr)
	}
	if cmd.Become && c.become == BecomeSudo {
		if op, err := sudoFailure(res); err != nil {
			return res, c.hostErr(op, err)
		}
	}
	return res, nil
}

// stopTimeout bounds the clean-up of a cancelled command.
const stopTimeout = 3 * time.Second

// stop ends a running remote command and closes its session. The
// supervising shell (see buildScript) told us its pid; a second session
// sends it SIGTERM, and its trap passes that on to the command's whole
// process group. The SSH "signal" request would be simpler, but sshd
// ignores it for root logins ("session signalling requires privilege
// separation"), and root is how many GPU nodes are reached.
func (c *Client) stop(sess *gossh.Session, pids *pidFilter) {
	defer sess.Close()
	pid := pids.wait(stopTimeout)
	if pid <= 0 {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s, err := c.client.NewSession()
		if err != nil {
			return
		}
		defer s.Close()
		_ = s.Run(fmt.Sprintf("kill -TERM %d 2>/dev/null", pid))
	}()
	select {
	case <-done:
	case <-c.dead:
	case <-time.After(stopTimeout):
	}
}

func (c *Client) isDead() bool {
	select {
	case <-c.dead:
		return true
	default:
		return false
	}
}

// waitDead gives the connection watcher a moment to notice a lost
// connection, so a dropped host is reported as such rather than as a
// failed command.
func (c *Client) waitDead(d time.Duration) bool {
	select {
	case <-c.dead:
		return true
	case <-time.After(d):
		return false
	}
}

func (c *Client) hostErr(op string, err error) *transport.HostError {
	return &transport.HostError{Host: c.host, Op: op, Err: err}
}

func (c *Client) ctxErr(ctx context.Context) error {
	cause := context.Cause(ctx)
	var cto *commandTimeoutError
	if errors.As(cause, &cto) {
		return c.hostErr("timeout", cto)
	}
	return transport.ContextError(ctx, c.host)
}

var envName = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// buildCommand is what Run sends for cmd: the command line, and what the
// command reads on its standard input.
//
// A command without input of its own (cmd.Stdin nil: the probe, and most
// of what apply runs) goes on standard input, behind a short loader line
// (stdinLoader), instead of inside the line. sshd hands the line to the
// login shell, which parses all of it, and buildScript's line must then
// be decoded by printf in a subshell and parsed again by eval: for the
// probe's 50-odd kB that cost about 4 ms of the node's CPU a host, as much
// as several of the commands the probe runs. The script's first line points
// standard input at /dev/null, so that nothing it runs reads the rest of
// the script as its input; the shell reads the script through its own
// descriptor. The line is no longer the whole command, so a node's audit
// log of the exec shows the loader, and the script only as what it runs.
func buildCommand(cmd transport.Command, become string) (string, io.Reader, error) {
	if cmd.Stdin != nil {
		line, err := buildScript(cmd, become)
		return line, cmd.Stdin, err
	}
	exports, err := exportLines(cmd.Env)
	if err != nil {
		return "", nil, err
	}
	loader := stdinLoader
	if cmd.Become && become == BecomeSudo {
		loader = "sudo -n -- /bin/sh -c " + transport.Quote(stdinLoader)
	}
	line := loginShellLine(supervisorHead, loader, supervisorTail)
	return line, &scriptInput{pieces: []string{"exec 0</dev/null\n" + exports, cmd.Script}}, nil
}

// scriptInput is a script sent on standard input (buildCommand), its
// pieces read from where they are: a probe's script is the caller's
// string, shared by every host of a command.
type scriptInput struct{ pieces []string }

// Read reads the pieces in turn.
func (s *scriptInput) Read(p []byte) (int, error) {
	for len(s.pieces) > 0 && s.pieces[0] == "" {
		s.pieces = s.pieces[1:]
	}
	if len(s.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.pieces[0])
	s.pieces[0] = s.pieces[0][n:]
	return n, nil
}

// WriteTo writes what is left of the pieces to w, each in one Write.
func (s *scriptInput) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for len(s.pieces) > 0 {
		n, err := io.WriteString(w, s.pieces[0])
		total += int64(n)
		s.pieces[0] = s.pieces[0][n:]
		if err != nil {
			return total, err
		}
		s.pieces = s.pieces[1:]
	}
	return total, nil
}

// stdinLoader runs the script that follows on standard input (see
// buildCommand). "." reads it in blocks as the shell parses it, through
// /dev/stdin opened anew. Where that cannot be opened it is read whole by
// cat instead: a socket (an sshd built without USE_PIPES) cannot be
// opened through /proc on Linux, nor a pipe of another user (a
// ForceCommand that drops to an unprivileged account, as
// TestPlanPreflightOverSSH's does: the pipe is sshd's, mode 0600). The
// test opens it with the regular builtin true, whose failed redirection
// the shell survives, its message sent to /dev/null first.
const stdinLoader = `if true 2>/dev/null </dev/stdin; then . /dev/stdin; else eval "$(cat)"; fi`

// exportLines are the shell's export lines for env, sorted by name.
func exportLines(env map[string]string) (string, error) {
	keys := make([]string, 0, len(env))
	for k := range env {
		if !envName.MatchString(k) {
			return "", fmt.Errorf("environment variable name %q is not a shell identifier", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var exports strings.Builder
	for _, k := range keys {
		exports.WriteString("export " + k + "=" + transport.Quote(env[k]) + "\n")
	}
	return exports.String(), nil
}

// buildScript wraps cmd, script and all, in one line for the remote login
// shell: the form of a command whose standard input is its own
// (cmd.Stdin set; see buildCommand).
//
// The login shell may not be POSIX (fish, tcsh), so it only execs /bin/sh
// with one argument written so that every shell reads it alike (see
// loginShellLine). That shell supervises: it runs the script in a
// background subshell reading the original stdin, and on SIGTERM (sent
// by Run when the context ends, see stop) or SIGHUP it signals its whole
// process group. It first prints its pid on stderr for stop to use; Run
// removes that line.
// sshd signals only the process it started; without this a cancelled
// `apt-get install` would go on running on the node.
//
// Env values are exported with quoting, since servers usually refuse the
// SSH "env" request (AcceptEnv). With become, the script runs under
// `sudo -n -- /bin/sh -c`, so sudo never waits for a password.
func buildScript(cmd transport.Command, become string) (string, error) {
	exports, err := exportLines(cmd.Env)
	if err != nil {
		return "", err
	}
	// The script is tens of kilobytes (the probe) and the same for every
	// host: the line is written in one buffer of its exact size, piece by
	// piece, not built as copies of the script (exports + script, its sudo
	// quoting, the supervisor around it, the escaped line).
	pieces := []string{supervisorHead, exports, cmd.Script, supervisorTail}
	if cmd.Become && become == BecomeSudo {
		if transport.Bare(pieces[1]) && transport.Bare(pieces[2]) {
			// Quote leaves a word bare ("id", or "" as ''): small, built as it is.
			pieces = []string{supervisorHead + "sudo -n -- /bin/sh -c " + transport.Quote(pieces[1]+pieces[2]), supervisorTail}
		} else {
			// Quote's form, "'" + each ' as '\'' + "'", written piece by piece.
			pieces = []string{supervisorHead + "sudo -n -- /bin/sh -c '", quoteInner(pieces[1]), quoteInner(pieces[2]), "'" + supervisorTail}
		}
	}
	return loginShellLine(pieces...), nil
}

// The supervisor around the script (see buildScript).
const (
	supervisorHead = "trap 'trap - TERM HUP; kill -TERM 0' TERM HUP\n" +
		"echo " + pidMarker + "$$ >&2\n" +
		"exec 3<&0\n" +
		"(\n"
	supervisorTail = "\n) <&3 3<&- &\n" +
		"wait $!\n"
)

// quoteInner is s as it reads inside transport.Quote's single quotes.
func quoteInner(s string) string { return strings.ReplaceAll(s, "'", `'\''`) }

// loginShellLine turns a POSIX sh script, the concatenation of pieces,
// into one command line that every login shell sshd may start (sh, bash,
// zsh, fish, tcsh/csh) parses the same way. Quoting the script is not
// enough: fish reads \\ and \' inside single quotes as escapes, and csh
// refuses a newline inside quotes ("Unmatched '"). So the line holds one
// single-quoted string in which newlines, quotes, backslashes, $, ` and !
// (csh history), control bytes and non-ASCII bytes are written as printf
// octal escapes: /bin/sh's builtin printf rebuilds the script and eval runs
// it. A backslash is never followed by another backslash or a quote, so
// fish keeps it literal; nothing outside the shell's builtins is needed, so
// an odd PATH cannot turn the script into a silent no-op.
func loginShellLine(pieces ...string) string {
	const head, tail = `exec /bin/sh -c 'eval "$(printf "`, `")"'`
	size := len(head) + len(tail)
	for _, p := range pieces {
		for i := 0; i < len(p); i++ {
			size += escapedLen(p[i])
		}
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString(head)
	for _, p := range pieces {
		for i := 0; i < len(p); i++ {
			switch c := p[i]; escapedLen(c) {
			case 4:
				// \ooo, written without fmt: a probe is tens of kilobytes.
				b.Write([]byte{'\\', '0' + c>>6, '0' + c>>3&7, '0' + c&7})
			case 2:
				b.WriteString("%%")
			default:
				b.WriteByte(c)
			}
		}
	}
	b.WriteString(tail)
	return b.String()
}

// escapedLen is how many bytes c takes in loginShellLine's printf format.
func escapedLen(c byte) int {
	switch {
	case c == '\n', c == '\'', c == '"', c == '\\', c == '$', c == '`', c == '!',
		// Control bytes and non-ASCII too: old csh uses the high bit
		// internally for quoting.
		c < ' ' && c != '\t', c >= 0x7f:
		return 4
	case c == '%':
		return 2
	}
	return 1
}

// SudoPasswordError says that sudo wanted a password. gpuform runs sudo
// with -n and never types passwords.
type SudoPasswordError struct {
	// Message is what sudo printed.
	Message string
}

// Error tells the operator what to configure.
func (e *SudoPasswordError) Error() string {
	return fmt.Sprintf("sudo asked for a password (%q): gpuform never enters one; allow the login user "+
		"to run gpuform's commands without a password (a NOPASSWD rule in /etc/sudoers.d/) or log in as root",
		e.Message)
}

// sudoFailure recognises sudo -n refusing to run because it needs a
// password or a terminal, or because of requiretty ("auth"), and sudo not
// being installed ("run").
func sudoFailure(res transport.Result) (string, error) {
	for _, line := range strings.Split(string(res.Stderr), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case res.ExitCode == 1 && strings.HasPrefix(line, "sudo:") &&
			(strings.Contains(line, "a password is required") ||
				strings.Contains(line, "a terminal is required") ||
				strings.Contains(line, "no tty present")):
			return "auth", &SudoPasswordError{Message: line}
		case res.ExitCode == 1 && strings.HasPrefix(line, "sudo:") && strings.Contains(line, "must have a tty"):
			// "Defaults requiretty" (RHEL 7's default): no NOPASSWD rule
			// helps, and gpuform never allocates a terminal.
			return "auth", fmt.Errorf("sudo refuses to run without a terminal (%q): gpuform runs commands without one; "+
				"add \"Defaults:<login user> !requiretty\" to a file in /etc/sudoers.d/", line)
		case res.ExitCode == 127 && strings.Contains(line, "sudo") &&
			(strings.Contains(line, "not found") || strings.Contains(line, "No such file")):
			return "run", fmt.Errorf("become = %q but sudo is not installed on the host (%s)", BecomeSudo, line)
		}
	}
	return "", nil
}
