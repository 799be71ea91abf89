package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/nodesh/nodeshtest"
)

// TestVerifyScriptsShellcheck checks scripts/*.sh as they are and as sent.
func TestVerifyScriptsShellcheck(t *testing.T) {
	nodeshtest.Shellcheck(t, map[string]string{
		"hash_file.sh":        hashFileScript,
		"agent.sh":            agentScript,
		"gpu_bus.sh":          busScript,
		"sent/hash_file.sh":   nodesh.Script(hashFileScript, []string{"/raid/x.sqsh", "300"}, facts.Resolver),
		"sent/agent.sh":       nodesh.Script(agentScript, []string{"upload", "", AgentCacheDir, "agent-00"}),
		"sent/gpu_bus.sh":     nodesh.Script(busScript, nil),
		"slurmd_gres.sh":      slurmdGScript,
		"sent/slurmd_gres.sh": nodesh.Script(slurmdGScript, nil),
	})
}

// TestSlurmdGScriptUnderEachShell runs slurmd_gres.sh under dash, bash and
// busybox ash with a stand-in slurmd first on PATH: it is asked for -G
// alone, and its standard error comes back on standard output.
func TestSlurmdGScriptUnderEachShell(t *testing.T) {
	bin := t.TempDir()
	log := filepath.Join(t.TempDir(), "argv")
	standIn := "#!/bin/sh\nprintf '%s\\n' \"$@\" >" + log + "\necho 'slurmd: Gres Name=gpu Type=h100 Count=1'\necho 'slurmd: error: x' >&2\n"
	if err := os.WriteFile(filepath.Join(bin, "slurmd"), []byte(standIn), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sh := range nodeshtest.Shells() {
		t.Run(sh.Name, func(t *testing.T) {
			os.Remove(log)
			cmd := nodeshtest.Command(t, sh, nodesh.Script(slurmdGScript, nil))
			cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			if want := "slurmd: Gres Name=gpu Type=h100 Count=1\nslurmd: error: x\n"; string(out) != want || stderr.Len() != 0 {
				t.Errorf("stdout %q, stderr %q; want stdout %q", out, stderr.String(), want)
			}
			if argv, _ := os.ReadFile(log); string(argv) != "-G\n" {
				t.Errorf("slurmd called with %q, want -G", argv)
			}
		})
	}
}

// TestAgentScriptUnderEachShell uploads a binary into $HOME's cache and
// finds it again, under dash, bash and busybox ash.
func TestAgentScriptUnderEachShell(t *testing.T) {
	data := []byte("\x7fELF not really\n")
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	name := "agent-" + want
	for _, sh := range nodeshtest.Shells() {
		t.Run(sh.Name, func(t *testing.T) {
			home := t.TempDir()
			run := func(action string, stdin string) string {
				cmd := nodeshtest.Command(t, sh, nodesh.Script(agentScript, []string{action, "", AgentCacheDir, name}))
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
				cmd.Stdin = strings.NewReader(stdin)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%s: %v %s", action, err, out)
				}
				return string(out)
			}
			path := filepath.Join(home, AgentCacheDir, name)
			if got := run("find", ""); got != path+"\n" {
				t.Errorf("find before the upload: %q", got)
			}
			if got := run("upload", string(data)); got != want+"  -\n" {
				t.Errorf("upload: %q", got)
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o700 {
				t.Errorf("uploaded file: %v %v", fi, err)
			}
			if got := run("find", ""); got != path+"\n"+want+"  -\n" {
				t.Errorf("find after the upload: %q", got)
			}
			if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
				t.Errorf("the cache holds %d entries, want only the agent", len(entries))
			}
		})
	}
}
