package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/nodesh/nodeshtest"
)

// TestRunnerScriptsShellcheck checks scripts/*.sh as they are and as sent.
func TestRunnerScriptsShellcheck(t *testing.T) {
	nodeshtest.Shellcheck(t, map[string]string{
		"host_name.sh":      hostNameScript,
		"sent/host_name.sh": nodesh.Script(hostNameScript, nil),
	})
}

// TestHostNameScriptUnderEachShell reads a root's host name under dash,
// bash and busybox ash.
func TestHostNameScriptUnderEachShell(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "proc/sys/kernel"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/sys/kernel/hostname"), []byte("gpu-a07\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sh := range nodeshtest.Shells() {
		t.Run(sh.Name, func(t *testing.T) {
			cmd := nodeshtest.Command(t, sh, nodesh.Script(hostNameScript, nil))
			cmd.Env = []string{"PATH=/usr/bin:/bin", "GPUFORM_ROOT=" + root}
			out, err := cmd.CombinedOutput()
			if err != nil || string(out) != "gpu-a07\n" {
				t.Errorf("%v: %q, want %q", err, out, "gpu-a07\n")
			}
		})
	}
}
