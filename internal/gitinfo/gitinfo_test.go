package gitinfo

import (
	"os"
	"path/filepath"
	"testing"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const sha = "0123456789abcdef0123456789abcdef01234567"

func TestFind(t *testing.T) {
	tests := map[string]struct {
		files map[string]string
		dir   string
		want  Info
		ok    bool
	}{
		"loose branch ref": {
			files: map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/refs/heads/main": sha + "\n",
				".git/config": "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = git@github.com:org/fleet.git\n"},
			dir:  "specs/hgx",
			want: Info{Commit: sha, Remote: "git@github.com:org/fleet.git", Path: "specs/hgx"},
			ok:   true,
		},
		"packed ref, token in the remote": {
			files: map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/packed-refs": "# pack-refs\n" + sha + " refs/heads/main\n",
				".git/config": "[remote \"origin\"]\n\turl = https://ci:SECRET@example.com/org/fleet.git\n"},
			dir:  ".",
			want: Info{Commit: sha, Remote: "https://example.com/org/fleet.git", Path: "."},
			ok:   true,
		},
		"detached HEAD, no remote": {
			files: map[string]string{".git/HEAD": sha + "\n"},
			dir:   "a",
			want:  Info{Commit: sha, Path: "a"},
			ok:    true,
		},
		// A worktree's .git is a file naming its git directory, whose
		// commondir holds the refs and the config.
		"worktree": {
			files: map[string]string{"main/.git/config": "[remote \"origin\"]\n\turl = /srv/fleet\n",
				"main/.git/refs/heads/wt":     sha + "\n",
				"main/.git/worktrees/wt/HEAD": "ref: refs/heads/wt\n", "main/.git/worktrees/wt/commondir": "../..\n",
				"wt/.git": "gitdir: ../main/.git/worktrees/wt\n"},
			dir:  "wt/x",
			want: Info{Commit: sha, Remote: "/srv/fleet", Path: "x"},
			ok:   true,
		},
		"not a repository": {files: map[string]string{"a/b": ""}, dir: "a"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			for p, c := range tc.files {
				write(t, filepath.Join(root, p), c)
			}
			dir := filepath.Join(root, tc.dir)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			got, ok := Find(dir)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tc.ok, got)
			}
			if !ok {
				return
			}
			got.Root = ""
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
