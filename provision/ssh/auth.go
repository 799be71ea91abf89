package ssh

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"

	gossh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// EncryptedKeyError says that a passphrase-protected key file was needed
// and the agent does not hold it. gpuform never asks for passphrases: a
// fleet run has no one to answer, and a prompt per host would hang it.
type EncryptedKeyError struct {
	// Files are the protected key files that were skipped.
	Files []string
}

// Error tells the operator to use ssh-agent.
func (e *EncryptedKeyError) Error() string {
	return fmt.Sprintf("key file %s is protected by a passphrase and gpuform never prompts for one: "+
		"load it into ssh-agent (ssh-add %s) and make sure SSH_AUTH_SOCK is set",
		strings.Join(e.Files, ", "), strings.Join(e.Files, " "))
}

// keyFileCache holds parsed key files for a Dialer's connections.
type keyFileCache struct {
	mu    sync.Mutex
	files map[string]parsedKey
}

// parsedKey is what a key file turned out to be.
type parsedKey struct {
	signer    gossh.Signer
	encrypted bool
	public    gossh.PublicKey // of an encrypted key, when known
	err       error           // unreadable or unparsable (never includes key bytes)
}

func (c *keyFileCache) load(path string) parsedKey {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pk, ok := c.files[path]; ok {
		return pk
	}
	var pk parsedKey
	data, err := os.ReadFile(path)
	if err != nil {
		pk.err = err
		// IdentityFile may name a key that only the agent holds, with its
		// public half on disk (as OpenSSH allows).
		pk.public = readPublicKey(path + ".pub")
		if pk.public == nil && strings.HasSuffix(path, ".pub") {
			pk.public = readPublicKey(path)
		}
	} else {
		signer, err := gossh.ParsePrivateKey(data)
		var missing *gossh.PassphraseMissingError
		switch {
		case errors.As(err, &missing):
			pk.encrypted = true
			pk.public = missing.PublicKey
			if pk.public == nil {
				pk.public = readPublicKey(path + ".pub")
			}
		case err != nil:
			// ParsePrivateKey's errors describe the format, not the bytes.
			pk.err = fmt.Errorf("not a usable private key: %v", err)
		default:
			pk.signer = signer
			pk.public = signer.PublicKey()
		}
	}
	c.files[path] = pk
	return pk
}

// keyring holds what a Dial authenticates with: the agents' keys and key
// files, shared by its hops.
type keyring struct {
	ctx    context.Context
	files  *keyFileCache
	agents map[string]*agentKeys // by socket; hops may name different agents (IdentityAgent)
}

// agentKeys is one ssh-agent's keys, or why it could not be used.
type agentKeys struct {
	conn  net.Conn
	keys  []gossh.Signer
	err   error
	holds map[string]bool // marshalled public keys the agent holds
}

type fileKey struct {
	signer    gossh.Signer
	encrypted bool
	err       error
}

func newKeyring(ctx context.Context, files *keyFileCache) *keyring {
	return &keyring{ctx: ctx, files: files, agents: map[string]*agentKeys{}}
}

// agent connects to the agent at sock once per Dial.
func (k *keyring) agent(sock string) *agentKeys {
	if a, ok := k.agents[sock]; ok {
		return a
	}
	a := &agentKeys{holds: map[string]bool{}}
	k.agents[sock] = a
	var d net.Dialer
	conn, err := d.DialContext(k.ctx, "unix", sock)
	if err != nil {
		a.err = fmt.Errorf("ssh-agent at %s is not reachable: %w", sock, err)
		return a
	}
	a.conn = conn
	signers, err := agent.NewClient(conn).Signers()
	if err != nil {
		a.err = fmt.Errorf("ssh-agent: list keys: %w", err)
		return a
	}
	a.keys = signers
	for _, s := range signers {
		a.holds[string(s.PublicKey().Marshal())] = true
	}
	return a
}

// Close ends the agent connections; they are needed only during
// authentication.
func (k *keyring) Close() {
	for _, a := range k.agents {
		if a.conn != nil {
			a.conn.Close()
		}
	}
}

func (k *keyring) load(path string, ag *agentKeys) fileKey {
	pk := k.files.load(path)
	fk := fileKey{signer: pk.signer, encrypted: pk.encrypted, err: pk.err}
	// A protected key the agent holds is no problem: the agent signs with
	// it.
	if pk.encrypted && pk.public != nil && ag != nil && ag.holds[string(pk.public.Marshal())] {
		fk.encrypted = false
	}
	return fk
}

func readPublicKey(path string) gossh.PublicKey {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	pub, _, _, _, err := gossh.ParseAuthorizedKey(data)
	if err != nil {
		return nil
	}
	return pub
}

// authFor is the ordered key list for one hop and the notes that explain
// an authentication failure.
type authFor struct {
	signers   []gossh.Signer
	encrypted []string
	notes     []string
}

// forEndpoint orders keys as documented: explicit key files, then the
// agent, then default key files; each public key once.
func (k *keyring) forEndpoint(ep endpoint) authFor {
	var a authFor
	var ag *agentKeys
	if ep.identityAgent != "" {
		ag = k.agent(ep.identityAgent)
	}
	seen := map[string]bool{}
	add := func(s gossh.Signer) {
		m := string(s.PublicKey().Marshal())
		if !seen[m] {
			seen[m] = true
			a.signers = append(a.signers, s)
		}
	}
	files := func(explicit bool) {
		for _, f := range ep.identityFiles {
			if f.explicit != explicit {
				continue
			}
			fk := k.load(f.path, ag)
			switch {
			case fk.signer != nil:
				add(fk.signer)
			case fk.encrypted:
				a.encrypted = append(a.encrypted, f.path)
			case fk.err != nil && errors.Is(fk.err, os.ErrNotExist) && k.files.load(f.path).public != nil:
				// Only the public half is on disk: the agent has to hold it.
			case fk.err != nil && (explicit || !errors.Is(fk.err, os.ErrNotExist)):
				// Missing default key files are normal; anything else is
				// worth saying when authentication fails.
				a.notes = append(a.notes, fmt.Sprintf("key file %s: %v", f.path, fk.err))
			}
		}
	}
	files(true)
	// IdentitiesOnly: offer only the agent keys that match an identity
	// file, so that an agent full of keys does not exhaust the server's
	// MaxAuthTries before the right one is tried.
	allowed := map[string]bool{}
	if ep.identitiesOnly {
		for _, f := range ep.identityFiles {
			if pk := k.files.load(f.path); pk.public != nil {
				allowed[string(pk.public.Marshal())] = true
			}
		}
	}
	var agentSigners []gossh.Signer
	if ag != nil {
		agentSigners = ag.keys
	}
	for _, s := range agentSigners {
		if ep.identitiesOnly && !allowed[string(s.PublicKey().Marshal())] {
			continue
		}
		add(s)
	}
	files(false)
	a.addCertificates(ep)
	switch {
	case ag == nil:
		a.notes = append(a.notes, "no ssh-agent (SSH_AUTH_SOCK is not set, or IdentityAgent is none)")
	case ag.err != nil:
		a.notes = append(a.notes, ag.err.Error())
	case len(ag.keys) == 0:
		a.notes = append(a.notes, "ssh-agent holds no keys")
	}
	return a
}

// addCertificates puts CertificateFile's certificates first, each signed
// with the key (from a file or the agent) whose public half it certifies,
// as ssh offers them.
func (a *authFor) addCertificates(ep endpoint) {
	var certs []gossh.Signer
	for _, path := range ep.certificateFiles {
		data, err := os.ReadFile(path)
		if err != nil {
			a.notes = append(a.notes, fmt.Sprintf("certificate file %s: %v", path, err))
			continue
		}
		pub, _, _, _, err := gossh.ParseAuthorizedKey(data)
		cert, ok := pub.(*gossh.Certificate)
		if err != nil || !ok {
			a.notes = append(a.notes, fmt.Sprintf("certificate file %s: not an OpenSSH certificate", path))
			continue
		}
		want := string(cert.Key.Marshal())
		found := false
		for _, s := range a.signers {
			if string(s.PublicKey().Marshal()) != want {
				continue
			}
			cs, err := gossh.NewCertSigner(cert, s)
			if err != nil {
				a.notes = append(a.notes, fmt.Sprintf("certificate file %s: %v", path, err))
			} else {
				certs = append(certs, cs)
			}
			found = true
			break
		}
		if !found {
			a.notes = append(a.notes, fmt.Sprintf("certificate file %s: its private key is in no identity file and not in ssh-agent", path))
		}
	}
	a.signers = append(certs, a.signers...)
}

// failure explains why authentication failed or cannot start.
func (a authFor) failure(ep endpoint, cause error) error {
	if len(a.encrypted) > 0 {
		return &EncryptedKeyError{Files: a.encrypted}
	}
	var msg strings.Builder
	if len(a.signers) == 0 {
		fmt.Fprintf(&msg, "no key to log in to %s as %s with", ep.alias, ep.user)
	} else {
		fmt.Fprintf(&msg, "%s refused all %d keys offered for user %s", ep.alias, len(a.signers), ep.user)
	}
	for _, n := range a.notes {
		msg.WriteString("; ")
		msg.WriteString(n)
	}
	if cause != nil {
		return fmt.Errorf("%s: %w", msg.String(), cause)
	}
	return errors.New(msg.String())
}
