package ssh

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// UnknownHostKeyError is returned when known_hosts holds no key for a host
// and new keys are not accepted.
type UnknownHostKeyError struct {
	// Address is the host as looked up in known_hosts ("[host]:port").
	Address string
	// KeyType is the offered key's algorithm, e.g. "ssh-ed25519".
	KeyType string
	// Fingerprint is the offered key's SHA256 fingerprint ("SHA256:…").
	Fingerprint string
	// KnownHostsFiles are the files that were searched.
	KnownHostsFiles []string
}

// Error tells the operator how to proceed safely.
func (e *UnknownHostKeyError) Error() string {
	return fmt.Sprintf("host key of %s is not known: it offered %s %s, which is in none of %s; "+
		"check the fingerprint with the host's owner, then add it to known_hosts (ssh-keyscan) "+
		"or run again with --accept-new-host-keys",
		e.Address, e.KeyType, e.Fingerprint, strings.Join(e.KnownHostsFiles, ", "))
}

// ChangedHostKeyError is returned when a host offers a key other than the
// one recorded for it. It is never overridden by AcceptNewHostKeys.
type ChangedHostKeyError struct {
	// Address is the host as looked up in known_hosts ("[host]:port").
	Address string
	// KeyType is the offered key's algorithm.
	KeyType string
	// Fingerprint is the offered key's SHA256 fingerprint.
	Fingerprint string
	// Known are the recorded keys, with file and line.
	Known []knownhosts.KnownKey
}

// Error names the offered key and every recorded one with its line.
func (e *ChangedHostKeyError) Error() string {
	var known []string
	for _, k := range e.Known {
		known = append(known, fmt.Sprintf("%s:%d (%s %s)", k.Filename, k.Line, k.Key.Type(), gossh.FingerprintSHA256(k.Key)))
	}
	// The removal command is written as ssh writes it, quoted and with the
	// file of the old line, so that it can be pasted as it is.
	var remove []string
	seen := map[string]bool{}
	for _, k := range e.Known {
		if !seen[k.Filename] {
			seen[k.Filename] = true
			remove = append(remove, fmt.Sprintf("ssh-keygen -f %q -R %q", k.Filename, e.Address))
		}
	}
	if len(remove) == 0 {
		remove = append(remove, fmt.Sprintf("ssh-keygen -R %q", e.Address))
	}
	return fmt.Sprintf("HOST KEY OF %s HAS CHANGED: it offered %s %s but known_hosts has %s; "+
		"this can be a man-in-the-middle attack. If the host was reinstalled, confirm the new "+
		"fingerprint with its owner and remove the old line: %s",
		e.Address, e.KeyType, e.Fingerprint, strings.Join(known, ", "), strings.Join(remove, "; "))
}

// RevokedHostKeyError is returned when the offered key is marked @revoked.
type RevokedHostKeyError struct {
	// Address is the host as looked up in known_hosts.
	Address string
	// Fingerprint is the offered key's SHA256 fingerprint.
	Fingerprint string
	// Revoked is the @revoked line.
	Revoked knownhosts.KnownKey
}

// Error names the revocation line.
func (e *RevokedHostKeyError) Error() string {
	return fmt.Sprintf("host key of %s (%s) is revoked by %s:%d", e.Address, e.Fingerprint, e.Revoked.Filename, e.Revoked.Line)
}

// hostKeys verifies one hop's host key.
type hostKeys struct {
	files     []string // all configured files; missing ones are skipped
	recordTo  string   // where AcceptNewHostKeys writes; "" for nowhere
	acceptNew bool
	hash      bool

	mu    sync.Mutex
	lines map[string][]string // file contents by name, for isAuthority
}

func newHostKeys(ep endpoint) *hostKeys {
	return &hostKeys{files: ep.knownHosts, recordTo: ep.recordTo, acceptNew: ep.acceptNew, hash: ep.hashKnownHosts}
}

// existing returns the configured files that exist; knownhosts.New fails on
// a missing one, and a fresh machine has no ~/.ssh/known_hosts yet.
func (h *hostKeys) existing() []string {
	var out []string
	for _, f := range h.files {
		if _, err := os.Stat(f); err == nil {
			out = append(out, f)
		}
	}
	return out
}

// callback returns the host key callback for one connection and the host
// key algorithms to offer, those already recorded for address first.
func (h *hostKeys) callback(address string) (gossh.HostKeyCallback, []string, error) {
	files := h.existing()
	db, err := knownhosts.New(files...)
	if err != nil {
		return nil, nil, fmt.Errorf("read known_hosts: %w", err)
	}
	cb := func(hostname string, remote net.Addr, key gossh.PublicKey) error {
		err := db(hostname, remote, key)
		if err == nil {
			return nil
		}
		return h.classify(hostname, key, err)
	}
	return cb, h.knownAlgorithms(db, address), nil
}

// plainKeys drops @cert-authority lines from want. knownhosts reports the
// authority's key among the "wanted" keys of every host the line matches,
// which would make a host whose certificate was not negotiated look as if
// its key had changed.
func (h *hostKeys) plainKeys(want []knownhosts.KnownKey) []knownhosts.KnownKey {
	var out []knownhosts.KnownKey
	for _, k := range want {
		if !h.isAuthority(k) {
			out = append(out, k)
		}
	}
	return out
}

// isAuthority reports whether the known_hosts line k came from is an
// @cert-authority line.
func (h *hostKeys) isAuthority(k knownhosts.KnownKey) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lines == nil {
		h.lines = map[string][]string{}
	}
	lines, ok := h.lines[k.Filename]
	if !ok {
		data, err := os.ReadFile(k.Filename)
		if err == nil {
			lines = strings.Split(string(data), "\n")
		}
		h.lines[k.Filename] = lines
	}
	if k.Line < 1 || k.Line > len(lines) {
		return false
	}
	return strings.HasPrefix(strings.TrimSpace(lines[k.Line-1]), "@cert-authority")
}

func (h *hostKeys) classify(hostname string, key gossh.PublicKey, err error) error {
	addr := knownhosts.Normalize(hostname)
	var keyErr *knownhosts.KeyError
	var revoked *knownhosts.RevokedError
	var want []knownhosts.KnownKey
	if errors.As(err, &keyErr) {
		want = h.plainKeys(keyErr.Want)
	}
	switch {
	case keyErr != nil && len(want) == 0:
		if h.acceptNew {
			return h.record(hostname, key)
		}
		return &UnknownHostKeyError{Address: addr, KeyType: key.Type(), Fingerprint: gossh.FingerprintSHA256(key), KnownHostsFiles: h.files}
	case keyErr != nil:
		return &ChangedHostKeyError{Address: addr, KeyType: key.Type(), Fingerprint: gossh.FingerprintSHA256(key), Known: want}
	case errors.As(err, &revoked):
		return &RevokedHostKeyError{Address: addr, Fingerprint: gossh.FingerprintSHA256(key), Revoked: revoked.Revoked}
	default:
		// Certificates from an unknown authority, expired certificates,
		// wrong principals.
		return fmt.Errorf("host key of %s (%s %s) not accepted: %w", addr, key.Type(), gossh.FingerprintSHA256(key), err)
	}
}

// record appends the key of a host new to known_hosts to the user's file,
// under a lock so that a fleet accepting many hosts at once (or two gpuform
// processes) neither interleaves lines nor records one host twice.
func (h *hostKeys) record(hostname string, key gossh.PublicKey) error {
	if h.recordTo == "" {
		return fmt.Errorf("host key of %s (%s) is not known and there is no user known_hosts file to record it in (HOME is not set)",
			knownhosts.Normalize(hostname), gossh.FingerprintSHA256(key))
	}
	path := h.recordTo
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("record host key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("record host key: %w", err)
	}
	defer f.Close()
	unlock, err := lockFile(f)
	if err != nil {
		return fmt.Errorf("record host key: lock %s: %w", path, err)
	}
	defer unlock()

	// Someone may have recorded this host since we read the file.
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("record host key: %w", err)
	}
	if db, err := knownhosts.New(path); err == nil {
		err := db(hostname, &net.TCPAddr{IP: net.IPv4zero}, key)
		var keyErr *knownhosts.KeyError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &keyErr) && len(h.plainKeys(keyErr.Want)) > 0:
			return &ChangedHostKeyError{Address: knownhosts.Normalize(hostname), KeyType: key.Type(), Fingerprint: gossh.FingerprintSHA256(key), Known: h.plainKeys(keyErr.Want)}
		}
	}

	name := knownhosts.Normalize(hostname)
	if h.hash {
		name = knownhosts.HashHostname(name)
	}
	line := knownhosts.Line([]string{name}, key) + "\n"
	if len(data) > 0 && data[len(data)-1] != '\n' {
		line = "\n" + line
	}
	if _, err := f.WriteString(line); err != nil {
		return fmt.Errorf("record host key in %s: %w", path, err)
	}
	return nil
}

// probeKey returns a key no host has; checking it against the database
// reveals which keys are recorded for an address (in the KeyError) without
// a second parser for known_hosts.
func probeKey() (gossh.PublicKey, error) {
	return gossh.NewPublicKey(ed25519.PublicKey(make([]byte, ed25519.PublicKeySize)))
}

// knownAlgorithms returns host key algorithms with those of the keys
// recorded for address first, followed by every other supported one. The
// server picks the first algorithm of ours it has, so a host known by its
// RSA key is asked for that key even if it also has an ed25519 one, which
// would otherwise look like a changed key. Hosts known only through
// @cert-authority lines keep the default order, which puts certificates
// first.
func (h *hostKeys) knownAlgorithms(db gossh.HostKeyCallback, address string) []string {
	probe, err := probeKey()
	if err != nil {
		return nil
	}
	err = db(address, &net.TCPAddr{IP: net.IPv4zero}, probe)
	var keyErr *knownhosts.KeyError
	if !errors.As(err, &keyErr) {
		return nil
	}
	want := h.plainKeys(keyErr.Want)
	if len(want) == 0 {
		return nil
	}
	var algos []string
	seen := map[string]bool{}
	add := func(a string) {
		if !seen[a] {
			seen[a] = true
			algos = append(algos, a)
		}
	}
	for _, k := range want {
		switch t := k.Key.Type(); t {
		case gossh.KeyAlgoRSA:
			// An RSA key signs with any of these; prefer SHA-2.
			add(gossh.KeyAlgoRSASHA512)
			add(gossh.KeyAlgoRSASHA256)
			add(gossh.KeyAlgoRSA)
		default:
			add(t)
		}
	}
	for _, a := range gossh.SupportedAlgorithms().HostKeys {
		add(a)
	}
	return algos
}
