package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpecFileLinkOutsideRepository: a pull request can commit
// main.gpuform.hcl as a link to any file the CI user can read (a cloud
// credentials file, ~/.terraformrc). validate, lint and plan printed that
// file's lines in their diagnostic snippets, and fmt rewrote it. A link out
// of the repository is now refused, by every command, without a line of
// the target shown; a link inside the repository is still followed.
func TestSpecFileLinkOutsideRepository(t *testing.T) {
	const secret = "hunter2-secret"
	outside := filepath.Join(t.TempDir(), "credentials.gpuform.hcl")
	writeFile(t, outside, "api_password = \""+secret+"\"\n")

	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	specDir := filepath.Join(repo, "cluster")
	if err := os.Mkdir(specDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(specDir, "main.gpuform.hcl"), "node \"a\" {\n  hosts = [\"sim://hgx-h100-stale\"]\n}\n")
	if err := os.Symlink(outside, filepath.Join(specDir, "leak.gpuform.hcl")); err != nil {
		t.Fatal(err)
	}
	env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
	for _, args := range [][]string{
		{"validate", specDir},
		{"validate", "-json", specDir},
		{"lint", specDir},
		{"plan", specDir},
		{"fmt", "-diff", specDir},
	} {
		t.Run(strings.Join(args[:len(args)-1], " "), func(t *testing.T) {
			code, out, errOut := runCLIEnv(t, env, args...)
			if code != ExitFailed || !strings.Contains(out+errOut, "outside its repository") {
				t.Errorf("exit %d, want 1 and the link refused\n%s%s", code, out, errOut)
			}
			if strings.Contains(out+errOut, secret) || strings.Contains(out+errOut, "api_password") {
				t.Errorf("the linked file's content was printed:\n%s%s", out, errOut)
			}
		})
	}
	if b, _ := os.ReadFile(outside); string(b) != "api_password = \""+secret+"\"\n" {
		t.Errorf("the file outside the repository was changed:\n%s", b)
	}

	// A spec shared between clusters of one repository, by a link, loads.
	os.Remove(filepath.Join(specDir, "leak.gpuform.hcl"))
	writeFile(t, filepath.Join(repo, "common.gpuform.hcl"), "locals {\n  x = 1\n}\n")
	if err := os.Symlink(filepath.Join("..", "common.gpuform.hcl"), filepath.Join(specDir, "common.gpuform.hcl")); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLIEnv(t, env, "validate", specDir); code != ExitOK {
		t.Errorf("validate with a link inside the repository: exit %d\n%s%s", code, out, errOut)
	}
}
