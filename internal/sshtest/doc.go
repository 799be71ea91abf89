// Package sshtest starts a real OpenSSH sshd for tests: on 127.0.0.1, on a
// free port, as the user running the tests (root included), with throwaway
// ed25519 host and user keys generated in t.TempDir() and a private
// sshd_config. It is what "real parts, not mocks" (docs/design.md, "Testing:
// real parts, not mocks") means for SSH: every end-to-end test of gpuform
// talks to the same sshd a user runs.
//
// It is not an SSH client and holds no gpuform logic; tests dial the server
// with provision/ssh (or any client) using the fields of Server.
//
// # Using it
//
//	srv := sshtest.Start(t, sshtest.Options{})
//	// srv.Host, srv.Port, srv.Addr    where it listens (127.0.0.1:PORT)
//	// srv.User                        the login user (the current user)
//	// srv.UserKeyFile                 unencrypted private key authorised to log in
//	// srv.KnownHostsFile              a known_hosts file holding srv.KnownHostsLine
//	// srv.KnownHostsLine              "[127.0.0.1]:PORT ssh-ed25519 AAAA…"
//	// srv.Sessions(), srv.Logins()    counted from sshd's own log
//	// srv.Stop(), srv.Kill()          graceful stop / SIGKILL of every sshd process
//	// srv.Pause(), srv.Resume()       SIGSTOP / SIGCONT: a host that stops answering
//
// For many hosts at once, StartFleet starts a few servers and writes an
// ssh_config with one alias per "host" (node-000, node-001, …) and a
// known_hosts file for all of them:
//
//	fl := sshtest.StartFleet(t, 4, 50, sshtest.Options{})
//	// ssh.Options{SSHConfigPath: fl.ConfigFile, KnownHostsFiles: []string{fl.KnownHostsFile}}
//	// dials any of fl.Hosts; fl.AddHost adds failing ones; fl.Sessions() sums the logs.
//
// The server is stopped by t.Cleanup, and its log (sshd -e, LogLevel
// VERBOSE) is printed with t.Log when the test failed.
//
// Sessions run with HOME set to an empty directory (Server.Home), so that the
// machine's own dotfiles (Debian's bash reads ~/.bashrc for every ssh
// command) neither slow nor pollute the tests.
//
// Options cover the variations gpuform's tests need: a fixed Port (restart a
// "host" on the same address with a new host key to test changed keys), a
// given HostKey, a host certificate signed by HostCA (for @cert-authority
// known_hosts lines), extra AuthorizedKeys, session environment (Env, for
// example PATH with recording stand-ins first) and ExtraConfig lines.
//
// # When sshd is missing
//
// Start looks for /usr/sbin/sshd (or sshd on PATH). When it is missing, the
// test is skipped — unless the environment variable CI is set (to anything
// but "", "false" or "0"), in which case
// it fails with "install openssh-server", because a CI run that silently
// skips every SSH test proves nothing. CI and the README's test command are
// expected to install openssh-server (Debian/Ubuntu: apt-get install -y
// openssh-server) before running go test.
//
// # Which user
//
// The login user is the user running the tests. sshd runs with UsePAM no
// (PAM needs root and a service file) and then refuses accounts it takes
// to be locked: system accounts such as nobody, and users whose password
// field in /etc/shadow starts with "!". Its log, printed when a test
// fails, says "User X not allowed because account is locked". Run the
// tests as root (as CI does) or as an ordinary login user.
//
// # Running as root
//
// sshd refuses to start as root without its privilege-separation directory
// (/run/sshd on Debian and Ubuntu, created by the init scripts that a
// container never runs). When running as root, Start creates it (mode 0755)
// if it is missing, as the distribution's service unit would.
package sshtest
