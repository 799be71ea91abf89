package bundle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/local"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/nodesh/nodeshtest"
)

// TestStageScriptsUnderEachShell: stage_put.sh renames a file into place
// only when its sha256 is the manifest's; a copy cut short (truncated on
// the way, or a disk that fills: the .part file is /dev/full) fails and
// leaves neither the file nor its .part; stage_have.sh removes the apt.conf
// a stage before wrote, so a repository being copied is never named.
func TestStageScriptsUnderEachShell(t *testing.T) {
	content := "a package\n"
	sum := sha256.Sum256([]byte(content))
	want := hex.EncodeToString(sum[:])
	for _, sh := range nodeshtest.Shells() {
		t.Run(sh.Name, func(t *testing.T) {
			root := t.TempDir()
			dir := NodeDir + "/repo"
			d := filepath.Join(root, dir)
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			run := func(script, stdin string, args ...string) (string, error) {
				cmd := nodeshtest.Command(t, sh, nodesh.Script(script, args))
				cmd.Env = append(os.Environ(), "GPUFORM_ROOT="+root)
				cmd.Stdin = strings.NewReader(stdin)
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			if err := os.WriteFile(filepath.Join(d, "apt.conf"), []byte("stale"), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := run(stageHaveScript, "a.deb\n", dir); err != nil || out != "" {
				t.Fatalf("stage_have.sh: %v %q", err, out)
			}
			if _, err := os.Stat(filepath.Join(d, "apt.conf")); !os.IsNotExist(err) {
				t.Errorf("stage_have.sh left the apt.conf of an earlier stage: %v", err)
			}
			if out, err := run(stagePutScript, content[:4], dir, "a.deb", want); err == nil || !strings.Contains(out, "the bundle's manifest says "+want) {
				t.Errorf("a truncated copy: %v %q", err, out)
			}
			if err := os.Symlink("/dev/full", filepath.Join(d, "a.deb.part")); err != nil {
				t.Fatal(err)
			}
			if out, err := run(stagePutScript, content, dir, "a.deb", want); err == nil || !strings.Contains(out, "is the disk full?") {
				t.Errorf("a full disk: %v %q", err, out)
			}
			for _, f := range []string{"a.deb", "a.deb.part"} {
				if _, err := os.Lstat(filepath.Join(d, f)); !os.IsNotExist(err) {
					t.Errorf("a failed copy left %s: %v", f, err)
				}
			}
			if out, err := run(stagePutScript, content, dir, "a.deb", want); err != nil {
				t.Fatalf("stage_put.sh: %v %s", err, out)
			}
			if out, err := run(stageHaveScript, "a.deb\nb.deb\n", dir); err != nil || out != want+" a.deb\n" {
				t.Errorf("stage_have.sh after the copy: %v %q", err, out)
			}
		})
	}
}

// TestNodeScriptsShellcheck checks the embedded node scripts.
func TestNodeScriptsShellcheck(t *testing.T) {
	nodeshtest.Shellcheck(t, map[string]string{
		"apt_download.sh": aptDownloadScript, "fetch.sh": fetchScript, "cleanup.sh": cleanupScript,
		"stage_have.sh": stageHaveScript, "stage_put.sh": stagePutScript, "stage_enable.sh": stageEnableScript,
		"dnf_download.sh": dnfDownloadScript, "stage_enable_dnf.sh": stageEnableDnfScript,
	})
}

// TestNodeHasThousandsOfFiles: the files a node already holds are asked
// for in one command whatever the repository's size: 4,000 names (a CUDA
// toolkit's closure on a bare host is hundreds of packages; the images
// are not staged) went as arguments to the script, past the kernel's 128
// KiB bound on one argument of sh -c, and the stage failed with
// "argument list too long". Run by this machine's sh through the local
// transport, in a scratch root.
func TestNodeHasThousandsOfFiles(t *testing.T) {
	root := t.TempDir()
	t.Setenv("GPUFORM_ROOT", root)
	dir := NodeDir + "/n-ubuntu-22.04-amd64"
	var names []string
	for i := range 4000 {
		names = append(names, fmt.Sprintf("cuda-nvml-dev-12-4_12.4.127-%d_amd64.deb", i))
	}
	if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
		t.Fatal(err)
	}
	content := "a package\n"
	sum := sha256.Sum256([]byte(content))
	if err := os.WriteFile(filepath.Join(root, dir, names[3999]), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	have, err := nodeHas(context.Background(), local.New("localhost"), false, dir, names)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{names[3999]: hex.EncodeToString(sum[:])}; !maps.Equal(have, want) {
		t.Errorf("nodeHas = %v, want %v", have, want)
	}
}
