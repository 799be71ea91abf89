package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gossh "golang.org/x/crypto/ssh"
)

// writeTestKey writes an unencrypted ed25519 private key and returns its
// path, so that a test reaches the point where ssh would authenticate.
func writeTestKey(t *testing.T) string {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := gossh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A host name that does not resolve is reported in ssh's words, before any
// key is looked for (the user here has none), for the target and for a
// jump host named in ssh config.
func TestUnresolvableHostIsWordedLikeSSH(t *testing.T) {
	home := t.TempDir()
	env := []string{"HOME=" + home, "SSH_AUTH_SOCK=", "USER=ops"}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `node "a" { hosts = ["nosuchhost.invalid", "gpu1"] }`)
	config := filepath.Join(t.TempDir(), "ssh_config")
	writeFile(t, config, "Host gpu1\n  HostName 127.0.0.1\n  ProxyJump nosuchjump.invalid\n")

	code, out, errOut := runCLIEnv(t, env, "facts", "-ssh-config", config, dir)
	all := out + errOut
	for _, want := range []string{
		"Could not resolve hostname nosuchhost.invalid: ",
		"jump host nosuchjump.invalid: Could not resolve hostname nosuchjump.invalid: ",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("output lacks %q:\n%s", want, all)
		}
	}
	if code != ExitFailed || strings.Contains(all, "no key") {
		t.Errorf("exit %d, want 1 and no word of keys:\n%s", code, all)
	}
}

// -connect-timeout takes ssh's ConnectTimeout form (seconds) as well as a
// duration; the limit is the one that applies to a host that never answers.
func TestConnectTimeoutSeconds(t *testing.T) {
	t.Parallel()
	// A server that accepts and never speaks: the SSH handshake waits.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `node "a" { hosts = ["ops@`+ln.Addr().String()+`"] }`)
	env := []string{"HOME=" + t.TempDir(), "SSH_AUTH_SOCK="}
	key := writeTestKey(t)
	for _, tc := range []struct{ value, want string }{
		{"1", "no answer within 1s"},
		{"1500ms", "no answer within 1.5s"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			code, out, errOut := runCLIEnv(t, env, "facts", "-ssh-config", "none", "-identity", key, "-connect-timeout", tc.value, dir)
			if code != ExitFailed || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("-connect-timeout %s: exit %d, want 1 with %q:\n%s%s", tc.value, code, tc.want, out, errOut)
			}
		})
	}
	for _, bad := range []string{"0", "-3", "soon"} {
		code, _, errOut := runCLIEnv(t, env, "facts", "-connect-timeout", bad, dir)
		if code != ExitFailed || !strings.Contains(errOut, "-connect-timeout: ") || strings.Contains(errOut, "--connect-timeout") {
			t.Errorf("-connect-timeout %s: exit %d, want 1 naming -connect-timeout:\n%s", bad, code, errOut)
		}
	}
}
