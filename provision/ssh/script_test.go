package ssh

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/provision/transport"
)

// runLocally runs a built script the way sshd does: a login shell's -c in a
// new session.
func runLocally(t *testing.T, script string, stdin string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = newPIDFilter(&stderr)
	return cmd, &stdout, &stderr
}

func TestBuildScript(t *testing.T) {
	tests := map[string]struct {
		cmd      transport.Command
		stdin    string
		wantOut  string
		wantExit int
	}{
		"stdin reaches the command": {cmd: transport.Command{Script: "cat; echo done"}, stdin: "abc\n", wantOut: "abc\ndone\n"},
		"exit status":               {cmd: transport.Command{Script: "exit 42"}, wantExit: 42},
		// Newlines, quotes and globs in values stay literal.
		"env quoting": {cmd: transport.Command{Script: `printf '[%s]' "$V"`, Env: map[string]string{"V": "a\nb 'c' * $(x)"}}, wantOut: "[a\nb 'c' * $(x)]"},
		"heredoc":     {cmd: transport.Command{Script: "cat <<'EOF'\nx $y\nEOF"}, wantOut: "x $y\n"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			script, err := buildScript(tt.cmd, "")
			if err != nil {
				t.Fatal(err)
			}
			cmd, stdout, _ := runLocally(t, script, tt.stdin)
			err = cmd.Run()
			var exitErr *exec.ExitError
			code := 0
			if errors.As(err, &exitErr) {
				code = exitErr.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantExit || stdout.String() != tt.wantOut {
				t.Errorf("got exit %d, stdout %q; want %d, %q", code, stdout, tt.wantExit, tt.wantOut)
			}
		})
	}
}

// runCommand runs what buildCommand built as sshd would: the line under
// /bin/sh -c in a new session, its input on a pipe, a socket (an sshd
// built without USE_PIPES) or a regular file.
func runCommand(t *testing.T, cmd transport.Command, become, stdinKind string) (string, int) {
	t.Helper()
	line, stdin, err := buildCommand(cmd, become)
	if err != nil {
		t.Fatal(err)
	}
	input, err := io.ReadAll(stdin)
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command("/bin/sh", "-c", line)
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	switch stdinKind {
	case "pipe":
		c.Stdin = bytes.NewReader(input)
	case "pipe of root, as nobody":
		// The pipe is this process's (root's, mode 0600); the command
		// runs as nobody, as under a ForceCommand that drops privileges.
		if os.Geteuid() != 0 {
			// Only root's pipe can be another user's for the command.
			sshtest.Missing(t, "needs root to run the command as another user")
		}
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			sshtest.Missing(t, "setpriv (util-linux) is not installed")
		}
		c = exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c", line)
		c.Dir = "/"
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		c.Stdin = bytes.NewReader(input)
	case "socket":
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		ours, theirs := os.NewFile(uintptr(fds[0]), "ours"), os.NewFile(uintptr(fds[1]), "theirs")
		defer theirs.Close()
		go func() {
			ours.Write(input)
			ours.Close()
		}()
		c.Stdin = theirs
	case "file":
		f := filepath.Join(t.TempDir(), "stdin")
		if err := os.WriteFile(f, input, 0o600); err != nil {
			t.Fatal(err)
		}
		in, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		c.Stdin = in
	default:
		t.Fatalf("stdin kind %q", stdinKind)
	}
	var stdout bytes.Buffer
	c.Stdout = &stdout
	c.Stderr = newPIDFilter(&bytes.Buffer{})
	err = c.Run()
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return stdout.String(), code
}

// TestBuildCommand: a command without input of its own reaches the shell
// on standard input, whatever that is, and what it runs reads /dev/null,
// not the rest of the script; a command with input keeps the input and
// goes in the line.
func TestBuildCommand(t *testing.T) {
	// Past the shell's read-ahead (dash reads 8 kB at a time), so that a
	// cat reading the script's input would print what follows it.
	padding := strings.Repeat("# padding past the read-ahead\n", 4096)
	tests := map[string]struct {
		cmd      transport.Command
		wantOut  string
		wantExit int
	}{
		"multi-line":                      {cmd: transport.Command{Script: "echo a\necho b"}, wantOut: "a\nb\n"},
		"exit status":                     {cmd: transport.Command{Script: "echo x; exit 42\necho not reached"}, wantOut: "x\n", wantExit: 42},
		"last status":                     {cmd: transport.Command{Script: "false"}, wantExit: 1},
		"env quoting":                     {cmd: transport.Command{Script: `printf '[%s]' "$V"`, Env: map[string]string{"V": "a\nb 'c' * $(x)"}}, wantOut: "[a\nb 'c' * $(x)]"},
		"no last newline":                 {cmd: transport.Command{Script: "echo end"}, wantOut: "end\n"},
		"heredoc":                         {cmd: transport.Command{Script: "cat <<'EOF'\nx $y\nEOF\n"}, wantOut: "x $y\n"},
		"reads /dev/null, not the script": {cmd: transport.Command{Script: "cat\n" + padding + "echo after\n"}, wantOut: "after\n"},
		"own input in the line":           {cmd: transport.Command{Script: "cat; echo done", Stdin: strings.NewReader("abc\n")}, wantOut: "abc\ndone\n"},
		"positional parameters unset":     {cmd: transport.Command{Script: `echo "[${1:-}]"`}, wantOut: "[]\n"},
	}
	for name, tt := range tests {
		kinds := []string{"pipe", "socket", "file", "pipe of root, as nobody"}
		if tt.cmd.Stdin != nil {
			// A command's own input is what it is: only the pipe it
			// arrives on.
			kinds = kinds[:1]
		}
		for _, kind := range kinds {
			t.Run(name+"/"+kind, func(t *testing.T) {
				out, code := runCommand(t, tt.cmd, "", kind)
				if code != tt.wantExit || out != tt.wantOut {
					t.Errorf("got exit %d, stdout %q; want %d, %q", code, out, tt.wantExit, tt.wantOut)
				}
			})
		}
	}
}

// TestBuildCommandLine: the line of a command on standard input is the
// loader only, however long the script, and passes the login-shell rules
// (no newline, escaped backslash or quote, two quotes); with sudo the
// loader runs under sudo -n.
func TestBuildCommandLine(t *testing.T) {
	probe := transport.Command{Script: facts.Script(resource.Reads()), Env: map[string]string{"GPUFORM_PROBE_NONCE": "0123abcd"}}
	line, _, err := buildCommand(probe, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(line) > 512 || strings.Contains(line, "gpuform_probe") {
		t.Errorf("the probe's line is %d bytes and holds the script: %.200q", len(line), line)
	}
	if strings.Contains(line, "\n") || strings.Contains(line, `\\`) || strings.Contains(line, `\'`) || strings.Count(line, "'") != 2 {
		t.Errorf("the line %q holds a newline, an escaped backslash or quote, or inner quotes, which fish or csh read differently", line)
	}
	if got := decodeLine(t, line); !strings.Contains(got, "\n"+stdinLoader+"\n") {
		t.Errorf("decoded line %q does not run the loader", got)
	}
	probe.Become = true
	sudoLine, _, err := buildCommand(probe, BecomeSudo)
	if err != nil {
		t.Fatal(err)
	}
	if got := decodeLine(t, sudoLine); !strings.Contains(got, "sudo -n -- /bin/sh -c "+transport.Quote(stdinLoader)) {
		t.Errorf("decoded line %q does not run the loader under sudo -n", got)
	}
	if _, _, err := buildCommand(transport.Command{Script: "id", Env: map[string]string{"A-B": "1"}}, ""); err == nil {
		t.Error("an environment name that is no shell identifier was accepted")
	}
}

// TestBuildCommandAllocatesNoCopy: the probe's script is read from the
// caller's string, not copied for each host.
func TestBuildCommandAllocatesNoCopy(t *testing.T) {
	cmd := transport.Command{Script: facts.Script(resource.Reads()), Env: map[string]string{"GPUFORM_PROBE_NONCE": "0123abcd"}}
	const runs = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		if _, _, err := buildCommand(cmd, ""); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 4<<10 {
		t.Errorf("buildCommand of a %d-byte probe allocated %d bytes; want at most 4 KiB", len(cmd.Script), per)
	}
}

// TestBuildScriptLoginShells runs built scripts under every login shell a
// user may have (sshd runs the command with the user's shell -c): fish reads
// \\ and \' inside single quotes as escapes and csh refuses newlines inside
// quotes, so a script must reach /bin/sh intact whatever the shell is.
// Shells not installed here are skipped; the line's shape is checked always.
func TestBuildScriptLoginShells(t *testing.T) {
	tests := map[string]struct {
		cmd     transport.Command
		wantOut string
	}{
		"multi-line":          {cmd: transport.Command{Script: "echo a\necho b"}, wantOut: "a\nb\n"},
		"quotes, backslashes": {cmd: transport.Command{Script: `printf '%s|' 'it'\''s' "a\\b" x\\y; echo`}, wantOut: `it's|a\b|x\y|` + "\n"},
		"env":                 {cmd: transport.Command{Script: `printf '[%s]' "$V"`, Env: map[string]string{"V": "a\nb 'c' \\ $(x) !1"}}, wantOut: "[a\nb 'c' \\ $(x) !1]"},
		"subshell, history":   {cmd: transport.Command{Script: "(echo '!!' \"!x\")"}, wantOut: "!! !x\n"},
		"utf-8, control":      {cmd: transport.Command{Script: "printf '%s' 'Grüße \x01\r\t%d'"}, wantOut: "Grüße \x01\r\t%d"},
	}
	for name, tt := range tests {
		script, err := buildScript(tt.cmd, "")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(script, "\n") || strings.Contains(script, `\\`) || strings.Contains(script, `\'`) || strings.Count(script, "'") != 2 {
			t.Errorf("%s: the command line %q holds a newline, an escaped backslash or quote, or inner quotes, which fish or csh read differently", name, script)
		}
		for _, sh := range []string{"sh", "bash", "dash", "zsh", "fish", "tcsh", "csh"} {
			path, err := exec.LookPath(sh)
			if err != nil {
				continue
			}
			t.Run(name+"/"+sh, func(t *testing.T) {
				cmd := exec.Command(path, "-c", script)
				cmd.Env = append(os.Environ(), "HOME="+t.TempDir()) // no rc files of this machine's user
				var stdout bytes.Buffer
				cmd.Stdout = &stdout
				cmd.Stderr = newPIDFilter(&bytes.Buffer{})
				if err := cmd.Run(); err != nil || stdout.String() != tt.wantOut {
					t.Errorf("%s -c: %v, stdout %q, want %q", sh, err, stdout.String(), tt.wantOut)
				}
			})
		}
	}
}

func TestBuildScriptBecome(t *testing.T) {
	script, err := buildScript(transport.Command{Script: "id -u", Become: true}, BecomeSudo)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(decodeLine(t, script), "sudo -n -- /bin/sh -c") {
		t.Errorf("script %q does not use sudo -n", script)
	}
	plain, _ := buildScript(transport.Command{Script: "id -u", Become: true}, "")
	if strings.Contains(decodeLine(t, plain), "sudo") {
		t.Errorf("without a become method, script %q uses sudo", plain)
	}
}

// TestSupervisorKillsProcessGroup checks what stop relies on: SIGTERM to
// the pid the supervisor reports ends the command and its children.
// Both forms: the script in the line, and on standard input.
func TestSupervisorKillsProcessGroup(t *testing.T) {
	for _, onStdin := range []bool{false, true} {
		t.Run(fmt.Sprintf("on stdin %v", onStdin), func(t *testing.T) {
			t.Parallel()
			testSupervisorKillsProcessGroup(t, onStdin)
		})
	}
}

func testSupervisorKillsProcessGroup(t *testing.T, onStdin bool) {
	marker := filepath.Join(t.TempDir(), "survived")
	command := transport.Command{Script: "sh -c 'sleep 2; touch " + marker + "' & sleep 2; touch " + marker}
	var script, stdin string
	if onStdin {
		line, in, err := buildCommand(command, "")
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(in)
		if err != nil {
			t.Fatal(err)
		}
		script, stdin = line, string(b)
	} else {
		var err error
		if script, err = buildScript(command, ""); err != nil {
			t.Fatal(err)
		}
	}
	cmd, _, _ := runLocally(t, script, stdin)
	filter := cmd.Stderr.(*pidFilter)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := filter.wait(5 * time.Second)
	if pid != cmd.Process.Pid {
		t.Fatalf("supervisor reported pid %d, want %d", pid, cmd.Process.Pid)
	}
	time.Sleep(100 * time.Millisecond)
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("supervisor still running 3s after SIGTERM")
	}
	time.Sleep(2500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Error("a child of the command survived SIGTERM to the supervisor")
	}
}

func TestPIDFilter(t *testing.T) {
	tests := map[string]struct {
		writes  []string
		wantOut string
		wantPID int
	}{
		"marker then output":   {writes: []string{pidMarker + "123\nerr\n"}, wantOut: "err\n", wantPID: 123},
		"marker in pieces":     {writes: []string{"gpuform-", "pid:4", "56\n", "x"}, wantOut: "x", wantPID: 456},
		"no marker":            {writes: []string{"sudo: a password is required\n"}, wantOut: "sudo: a password is required\n"},
		"prefix only, no line": {writes: []string{"gpuform-pid:"}, wantOut: "gpuform-pid:"},
		// A marker that is not a number is passed on, not trusted.
		"bad pid": {writes: []string{pidMarker + "12x\nrest"}, wantOut: pidMarker + "12x\nrest"},
		"signed":  {writes: []string{pidMarker + "+7\n"}, wantOut: pidMarker + "+7\n"},
		"long":    {writes: []string{strings.Repeat("y", 100)}, wantOut: strings.Repeat("y", 100)},
		// What a login shell's rc file prints comes first.
		"rc noise first": {writes: []string{"stty: not a tty\n", "pyenv: cannot rehash\n" + pidMarker + "77\nerr\n"}, wantOut: "stty: not a tty\npyenv: cannot rehash\nerr\n", wantPID: 77},
		// An rc file whose last message lacks its newline (printf "Welcome")
		// puts the marker at the end of its line.
		"rc noise without newline": {writes: []string{"Welcome", pidMarker + "91\nerr\n"}, wantOut: "Welcome\nerr\n", wantPID: 91},
		// Only the first marker is the supervisor's; the command may print one.
		"second marker kept": {writes: []string{pidMarker + "5\n" + pidMarker + "6\n"}, wantOut: pidMarker + "6\n", wantPID: 5},
		"marker too late":    {writes: []string{strings.Repeat("z\n", maxMarkerSearch), pidMarker + "8\n"}, wantOut: strings.Repeat("z\n", maxMarkerSearch) + pidMarker + "8\n"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			f := newPIDFilter(&buf)
			for _, w := range tt.writes {
				if n, err := f.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			f.flush()
			if buf.String() != tt.wantOut || f.wait(0) != tt.wantPID {
				t.Errorf("output %q, pid %d; want %q, %d", buf.String(), f.wait(0), tt.wantOut, tt.wantPID)
			}
		})
		// As an SSH session copies stderr in (io.Copy, so ReadFrom), into
		// a writer that reads for itself once the marker is past
		// (bytes.Buffer and OutputBuffer are io.ReaderFrom).
		t.Run(name+"/ReadFrom", func(t *testing.T) {
			var buf bytes.Buffer
			f := newPIDFilter(&buf)
			want := strings.Join(tt.writes, "")
			if n, err := io.Copy(f, &readPieces{pieces: append([]string(nil), tt.writes...)}); n != int64(len(want)) || err != nil {
				t.Fatalf("io.Copy = %d, %v; want %d bytes", n, err, len(want))
			}
			f.flush()
			if buf.String() != tt.wantOut || f.wait(0) != tt.wantPID {
				t.Errorf("output %q, pid %d; want %q, %d", buf.String(), f.wait(0), tt.wantOut, tt.wantPID)
			}
		})
	}
}

// readPieces reads its pieces one a Read (at most len(p) of one); it is no
// io.WriterTo, as an SSH channel is not.
type readPieces struct{ pieces []string }

func (r *readPieces) Read(p []byte) (int, error) {
	if len(r.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.pieces[0])
	if r.pieces[0] = r.pieces[0][n:]; r.pieces[0] == "" {
		r.pieces = r.pieces[1:]
	}
	return n, nil
}

// FuzzPIDFilter feeds the filter what a remote host may write on stderr:
// whatever the bytes and however they are split, nothing is lost except one
// well-formed marker line at the very start.
func FuzzPIDFilter(f *testing.F) {
	f.Add([]byte(pidMarker+"42\nhello\n"), uint8(3))
	f.Add([]byte("plain stderr"), uint8(1))
	f.Add([]byte(pidMarker), uint8(5))
	f.Add([]byte(pidMarker+"-1\n"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, split uint8) {
		var buf bytes.Buffer
		p := newPIDFilter(&buf)
		step := int(split%16) + 1
		for i := 0; i < len(data); i += step {
			end := min(i+step, len(data))
			if n, err := p.Write(data[i:end]); n != end-i || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		p.flush()
		pid := p.wait(0)
		got := buf.Bytes()
		if pid == 0 {
			if !bytes.Equal(got, data) {
				t.Fatalf("no marker, output %q, want %q", got, data)
			}
			return
		}
		// Some line of data ended with the marker for pid; removing the
		// marker gives the output (text before it on its line keeps the
		// line's newline).
		for k := 0; k < len(data); k++ {
			end := bytes.IndexByte(data[k:], '\n')
			if end < 0 {
				break
			}
			if n, ok := parseMarker(data[k : k+end]); ok && n == pid {
				want := append([]byte{}, data[:k]...)
				if k > 0 && data[k-1] != '\n' {
					want = append(want, '\n')
				}
				want = append(want, data[k+end+1:]...)
				if bytes.Equal(got, want) {
					return
				}
			}
		}
		t.Fatalf("pid %d and output %q do not match input %q", pid, got, data)
	})
}

func TestKnownAlgorithms(t *testing.T) {
	rsaLine := "node ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDdJvYTbzymSlvHh7wahMAp9RqvvSOfnC9l76Vyk8o5bdP9yXfjIi0Nh4CzCPGl+XAqFdvOh/IHtpXgv4gW9w0ByKbDjNQ6fxNvQuMhgM2j+UySIFbO5xwWn8a4hzJ07/RpSP0q2b2lbWTbaR7GHy4pJOXVaaTprVfzFD9vypK3Rw=="
	ca := sshtestKey(t)
	tests := map[string]struct {
		content string
		first   []string
	}{
		"rsa known": {content: rsaLine + "\n", first: []string{gossh.KeyAlgoRSASHA512, gossh.KeyAlgoRSASHA256, gossh.KeyAlgoRSA}},
		// Only an authority: keep the default order (certificates first).
		"authority only": {content: "@cert-authority node " + string(gossh.MarshalAuthorizedKey(ca))},
		"unknown host":   {content: "other " + strings.TrimPrefix(rsaLine, "node ") + "\n"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			kh := filepath.Join(t.TempDir(), "known_hosts")
			if err := os.WriteFile(kh, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			h := &hostKeys{files: []string{kh}}
			db, err := knownhosts.New(kh)
			if err != nil {
				t.Fatal(err)
			}
			got := h.knownAlgorithms(db, "node:22")
			if tt.first == nil {
				if got != nil {
					t.Errorf("algorithms = %v, want the default (nil)", got)
				}
				return
			}
			if len(got) < len(tt.first) || strings.Join(got[:len(tt.first)], " ") != strings.Join(tt.first, " ") {
				t.Errorf("algorithms = %v, want %v first", got, tt.first)
			}
			if !contains(got, gossh.KeyAlgoED25519) {
				t.Errorf("algorithms %v drop ed25519: a host that lost its RSA key would fail to negotiate instead of being reported as changed", got)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func sshtestKey(t *testing.T) gossh.PublicKey {
	t.Helper()
	pub, err := probeKey()
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// decodeLine returns the sh script inside a loginShellLine command line,
// rebuilt by running its printf.
func decodeLine(t *testing.T, line string) string {
	t.Helper()
	_, rest, ok := strings.Cut(line, `$(printf "`)
	format, _, ok2 := strings.Cut(rest, `")"'`)
	if !ok || !ok2 {
		t.Fatalf("not a login-shell line: %q", line)
	}
	out, err := exec.Command("/bin/sh", "-c", `printf "`+format+`"`).Output()
	if err != nil {
		t.Fatalf("printf %q: %v", format, err)
	}
	return string(out)
}

// TestSudoFailure: what sudo -n prints when it will not run a command is
// told apart from the command's own failure, and each refusal says what to
// configure. RHEL 7's default "Defaults requiretty" refuses without a
// terminal, which no NOPASSWD rule fixes.
func TestSudoFailure(t *testing.T) {
	tests := []struct {
		name   string
		exit   int
		stderr string
		op     string
		want   string
	}{
		{"password", 1, "sudo: a password is required\n", "auth", "NOPASSWD"},
		{"requiretty", 1, "sudo: sorry, you must have a tty to run sudo\n", "auth", "requiretty"},
		{"not installed", 127, "sh: 1: sudo: not found\n", "run", "sudo is not installed"},
		{"lecture-free noise", 1, "sudo: unable to resolve host node1: Name or service not known\n", "", ""},
		{"command failed", 1, "grep: x: No such file or directory\n", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op, err := sudoFailure(transport.Result{ExitCode: tt.exit, Stderr: []byte(tt.stderr)})
			if op != tt.op || (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("got %q, %v; want %q with %q", op, err, tt.op, tt.want)
			}
		})
	}
}

// oldBuildScript is how buildScript built the line before it wrote it in
// one buffer (copies of the script: exports + script, its sudo quoting,
// the supervisor around it, then the escaped line): the reference the line
// must stay byte-identical to.
func oldBuildScript(cmd transport.Command, become string) string {
	var inner strings.Builder
	keys := make([]string, 0, len(cmd.Env))
	for k := range cmd.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&inner, "export %s=%s\n", k, transport.Quote(cmd.Env[k]))
	}
	inner.WriteString(cmd.Script)
	script := inner.String()
	if cmd.Become && become == BecomeSudo {
		script = "sudo -n -- /bin/sh -c " + transport.Quote(script)
	}
	supervisor := "trap 'trap - TERM HUP; kill -TERM 0' TERM HUP\n" +
		"echo " + pidMarker + "$$ >&2\n" +
		"exec 3<&0\n" +
		"(\n" + script + "\n) <&3 3<&- &\n" +
		"wait $!\n"
	var b strings.Builder
	b.WriteString(`exec /bin/sh -c 'eval "$(printf "`)
	for i := 0; i < len(supervisor); i++ {
		switch c := supervisor[i]; {
		case c == '\n', c == '\'', c == '"', c == '\\', c == '$', c == '`', c == '!',
			c < ' ' && c != '\t', c >= 0x7f:
			fmt.Fprintf(&b, "\\%03o", c)
		case c == '%':
			b.WriteString("%%")
		default:
			b.WriteByte(c)
		}
	}
	b.WriteString(`")"'`)
	return b.String()
}

// TestBuildScriptUnchanged: the line written piece by piece is byte for
// byte the one built from copies, with and without sudo, for a bare word,
// an empty script, quotes, %, control and non-ASCII bytes, and the probe.
func TestBuildScriptUnchanged(t *testing.T) {
	probe := facts.Script(resource.Reads())
	env := map[string]string{"GPUFORM_PROBE_NONCE": "0123abcd", "GPUFORM_ROOT": "/tmp/it's root", "B": ""}
	for _, cmd := range []transport.Command{
		{Script: "id"},
		{Script: ""},
		{Script: "printf '%s\\n' \"$x\" `date` !! \x01\xc3\xa9\t%"},
		{Script: "id", Env: map[string]string{"A": "1"}},
		{Script: probe, Env: env},
	} {
		for _, become := range []string{"", BecomeSudo} {
			for _, b := range []bool{false, true} {
				cmd.Become = b
				got, err := buildScript(cmd, become)
				if err != nil {
					t.Fatal(err)
				}
				if want := oldBuildScript(cmd, become); got != want {
					t.Errorf("script %.20q, env %v, become %v/%q: the line differs from the reference\ngot  %.200q\nwant %.200q", cmd.Script, cmd.Env, b, become, got, want)
				}
			}
		}
	}
}

// TestBuildScriptAllocatesTheLineOnce: a probe's line (about 45 kB) is
// the one allocation of its size buildScript makes; building it from
// copies of the script allocated about three times as much.
func TestBuildScriptAllocatesTheLineOnce(t *testing.T) {
	cmd := transport.Command{Script: facts.Script(resource.Reads()), Env: map[string]string{"GPUFORM_PROBE_NONCE": "0123abcd"}}
	line, err := buildScript(cmd, "")
	if err != nil {
		t.Fatal(err)
	}
	const runs = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		if _, err := buildScript(cmd, ""); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	// The bound is the line rounded up to whole 8 KiB pages, as Go's
	// allocator gives an object over 32 KiB, plus an eighth for the rest:
	// a 49,465-byte line is a 57,344-byte allocation. Copies of the script
	// (the old construction) cost about three lines.
	const page = 8 << 10
	n := uint64(len(line))
	if per, most := (after.TotalAlloc-before.TotalAlloc)/runs, (n+page-1)/page*page+n/8; per > most {
		t.Errorf("buildScript of a %d-byte line allocated %d bytes; want at most %d", len(line), per, most)
	}
}
