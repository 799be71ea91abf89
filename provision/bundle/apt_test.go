package bundle

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/sshtest"
)

// A bundle built with a long temporary directory still gets its signing
// key: gpg-agent's sockets live in the GnuPG home when there is no
// /run/user/UID (root in a container, as in CI), and a home past the
// socket address limit made key generation fail ("No agent running").
// The real gpg makes the key.
func TestSignerWithLongTempDir(t *testing.T) {
	if _, err := exec.LookPath("gpg"); err != nil {
		sshtest.Missing(t, "gpg is not installed (scripts/test.sh installs gnupg)")
	}
	t.Parallel()
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 90))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	s, err := NewSigner(context.Background(), long, out)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(s.home)+len("/S.gpg-agent.browser") > 107 {
		t.Errorf("home %s leaves no room for the agent's sockets", s.home)
	}
	if fi, err := os.Stat(filepath.Join(out, KeyFile)); err != nil || fi.Size() == 0 {
		t.Errorf("public key: %v", err)
	}
}
