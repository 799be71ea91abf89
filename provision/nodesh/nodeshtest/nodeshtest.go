// Package nodeshtest runs node-side shell in tests: under each POSIX shell
// a node may have as /bin/sh, and through shellcheck.
package nodeshtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/sshtest"
)

// Shell is one shell a node may run gpuform's scripts with.
type Shell struct {
	// Name names it in subtest names ("dash", "bash-posix", "busybox-ash").
	Name string
	// Argv runs a script file given as the next argument.
	Argv []string
	// Package is the Debian package that has it, for the message when it
	// is missing.
	Package string
}

// Shells are the shells nodes run: Debian's dash, bash in POSIX mode, and
// busybox ash as Debian's busybox-static builds it (preferring its own
// applets to $PATH, FEATURE_SH_STANDALONE).
func Shells() []Shell {
	return []Shell{
		{"dash", []string{"dash"}, "dash"},
		{"bash-posix", []string{"bash", "--posix"}, "bash"},
		{"busybox-ash", []string{"busybox", "sh"}, "busybox-static"},
	}
}

// Need fails (under CI) or skips t when sh is not installed.
func Need(t testing.TB, sh Shell) {
	t.Helper()
	if _, err := exec.LookPath(sh.Argv[0]); err != nil {
		sshtest.Missing(t, sh.Argv[0]+" is not installed (apt-get install "+sh.Package+")")
	}
}

// Command returns the command that runs script (written to a file in a
// temporary directory) under sh with args.
func Command(t testing.TB, sh Shell, script string, args ...string) *exec.Cmd {
	t.Helper()
	Need(t, sh)
	f := filepath.Join(t.TempDir(), "script.sh")
	if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := append(append(append([]string(nil), sh.Argv[1:]...), f), args...)
	return exec.Command(sh.Argv[0], argv...)
}

// Shellcheck runs shellcheck -s sh over scripts (name to text) and fails t
// with its findings. Without shellcheck it fails under CI and skips
// elsewhere (apt-get install shellcheck).
func Shellcheck(t testing.TB, scripts map[string]string) {
	t.Helper()
	if _, err := exec.LookPath("shellcheck"); err != nil {
		sshtest.Missing(t, "shellcheck is not installed (apt-get install shellcheck)")
	}
	dir := t.TempDir()
	var names []string
	for name, text := range scripts {
		f := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	cmd := exec.Command("shellcheck", append([]string{"-s", "sh", "-f", "gcc"}, names...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("shellcheck -s sh: %v\n%s", err, strings.TrimSpace(string(out)))
	}
}
