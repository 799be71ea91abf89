// Package ssh is gpuform's SSH transport: a transport.Transport that reaches
// a node the way OpenSSH would, built on golang.org/x/crypto/ssh.
//
// It is not a general SSH library and knows nothing of facts, plans or
// specs; it opens one verified, authenticated connection per host and runs
// shell scripts over it.
//
// # Behaviour
//
//   - ~/.ssh/config is read as OpenSSH's readconf.c reads it (config.go):
//     Host patterns (wildcards, negation) against the name as given; Match
//     all, host (against the HostName set so far, %h substituted),
//     originalhost, user, localuser, canonical and final; Include (relative
//     to ~/.ssh, globs, conditional inside Host/Match); the first value of
//     a keyword wins, IdentityFile and CertificateFile accumulate. Keywords
//     read: HostName, User, Port, IdentityFile, IdentitiesOnly,
//     CertificateFile, IdentityAgent, ProxyJump, ConnectTimeout,
//     ServerAliveInterval, ServerAliveCountMax, UserKnownHostsFile,
//     GlobalKnownHostsFile, StrictHostKeyChecking, HashKnownHosts. Those
//     that would make gpuform connect differently from ssh and that it
//     does not implement (ProxyCommand, HostKeyAlias, CanonicalizeHostname
//     yes, Match exec) are an error naming FILE:LINE for the hosts they
//     apply to; other keywords are ignored. TestConfigLikeOpenSSH compares
//     the result with `ssh -G`.
//   - The host name is resolved and reached before keys are looked for; a
//     name that does not resolve reads as ssh's "Could not resolve
//     hostname X: Name or service not known".
//   - Authentication uses ssh-agent (SSH_AUTH_SOCK) and key files. A
//     passphrase-protected key is never prompted for: when it is needed and
//     the agent does not hold it, the error says to load it with ssh-add.
//   - Host keys are verified against known_hosts, @cert-authority lines
//     included. An unknown key is an error naming the host and the key's
//     SHA256 fingerprint unless AcceptNewHostKeys is set (then the key is
//     appended, like StrictHostKeyChecking=accept-new); a changed key is
//     always an error. Algorithms already known for a host are negotiated
//     first, so a host with an ed25519 and an RSA key is not reported as
//     changed because the client preferred the type that is not recorded.
//   - ProxyJump through any number of bastions; every hop is verified and
//     authenticated the same way. As with ssh -J, the first jump host's own
//     ProxyJump from ssh_config is followed.
//   - Keepalives (keepalive@openssh.com) declare a silent connection dead
//     after ServerAliveCountMax misses; connect and command timeouts; a
//     cancelled context or a command timeout ends the remote command (a
//     second session sends SIGTERM to the shell supervising it, which passes
//     it to the command's whole process group; sshd ignores the SSH
//     "signal" request for root logins) and returns the context's error.
//   - Become "sudo" runs commands under `sudo -n`; a sudo that wants a
//     password is reported as such instead of hanging.
//   - One connection per host, reused by every Run (each Run is one
//     session, one exec). For a fleet, NewDialer reads ssh_config and key
//     files once and its Dial serves every host.
//
// Every error from Dial and Run is a *transport.HostError whose Op is one
// of "resolve", "connect", "auth", "host key", "run" or "timeout". Key
// material and passphrases never appear in errors.
//
// # Precedence of settings
//
// As in OpenSSH, where command-line options are taken before the
// configuration file, an explicit value wins:
//
//  1. user@host:port written in the host string itself,
//  2. then non-zero fields of Options (from the inventory or the command
//     line),
//  3. then the first matching value in the ssh_config file,
//  4. then the defaults (port 22, the local user name, ~/.ssh/id_ed25519,
//     id_ecdsa and id_rsa, ~/.ssh/known_hosts plus /etc/ssh/ssh_known_hosts,
//     a 30 s connect timeout, keepalives every 15 s with 3 misses allowed).
//
// Only the user's file (or the one named in Options) is read, not the
// system-wide /etc/ssh/ssh_config.
//
// IdentityFiles from Options are tried before those from ssh_config, then
// the agent's keys, then the default key files. Options.User, Port and
// ProxyJump apply to the target host only; jump hosts take theirs from the
// jump specification and ssh_config, as `ssh -J` does. Identity files,
// known_hosts files and AcceptNewHostKeys apply to every hop.
package ssh
