package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const unformatted = "locals {\n  a=1\n}\n"

// TestFmtRefusesReadOnlyFile checks that fmt leaves a 0444 file alone
// instead of replacing it by a writable copy, for root too.
func TestFmtRefusesReadOnlyFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "main.gpuform.hcl")
	writeFile(t, p, unformatted)
	if err := os.Chmod(p, 0o444); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "", "fmt", p)
	if code != ExitFailed || !strings.Contains(errOut, "read-only (mode 0444)") {
		t.Errorf("exit %d, want 1 naming the read-only file; stderr:\n%s", code, errOut)
	}
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != unformatted || info.Mode().Perm() != 0o444 {
		t.Errorf("file changed: mode %v, content %q", info.Mode(), b)
	}
}

// TestFmtKeepsOwnerGroupAndMode checks that fmt's replacement file has the
// group and mode of the file it replaces.
func TestFmtKeepsOwnerGroupAndMode(t *testing.T) {
	p := filepath.Join(t.TempDir(), "main.gpuform.hcl")
	writeFile(t, p, unformatted)
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	// A group other than the one new files get: any as root, else one of
	// the user's supplementary groups.
	gid := -1
	if os.Geteuid() == 0 {
		gid = 4242
	} else if groups, _ := os.Getgroups(); len(groups) > 0 {
		for _, g := range groups {
			if g != os.Getegid() {
				gid = g
			}
		}
	}
	if gid < 0 {
		t.Skip("no second group to give the file")
	}
	if err := os.Chown(p, -1, gid); err != nil {
		t.Skip(err)
	}
	if code, _, errOut := runCLI(t, "", "fmt", p); code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := int(info.Sys().(*syscall.Stat_t).Gid); got != gid || info.Mode().Perm() != 0o640 {
		t.Errorf("after fmt: group %d mode %v, want group %d mode 0640", got, info.Mode().Perm(), gid)
	}
	if b, _ := os.ReadFile(p); string(b) == unformatted {
		t.Error("fmt did not rewrite the file")
	}
}

// TestImportOutRefusesSymlink checks that import -out does not write
// through a dangling symlink planted where the spec is to go.
func TestImportOutRefusesSymlink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	link := filepath.Join(dir, "main.gpuform.hcl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	code, _, errOut := runCLIEnv(t, env, "import", "-out", link, "sim://hgx-h100-stale")
	if code != ExitFailed || !strings.Contains(errOut, "import never overwrites a file") {
		t.Errorf("exit %d, want 1 refusing the link; stderr:\n%s", code, errOut)
	}
	if _, err := os.Lstat(target); err == nil {
		t.Error("import wrote through the symlink")
	}
}
