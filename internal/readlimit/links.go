package readlimit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LinkLeavesRepository refuses path when it is a symbolic link whose target
// lies outside the repository that holds the link: the nearest directory
// above it with a .git entry, or the link's own directory when there is
// none. A spec directory comes from pull requests, and a committed link
// such as main.gpuform.hcl -> ~/.aws/credentials would otherwise have its
// lines printed in diagnostic snippets on the CI machine (or be rewritten
// by fmt and lock). Links that stay inside the repository, such as a spec
// shared by two clusters, are followed.
func LinkLeavesRepository(path string) error {
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	target, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return fmt.Errorf("%s is a symbolic link gpuform cannot follow: %v", path, err)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return err
	}
	boundary, what := repositoryRoot(dir), "repository"
	if boundary == "" {
		boundary, what = dir, "directory"
	}
	if rel, err := filepath.Rel(boundary, target); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s is a symbolic link to %s, outside its %s %s; gpuform neither reads nor writes through it, so that a spec cannot reach files of the machine it runs on (copy the file into the %s instead)", path, target, what, boundary, what)
	}
	return nil
}

// repositoryRoot returns the nearest directory at or above dir holding a
// .git entry (a directory, or a file in a worktree), "" when there is none.
func repositoryRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}
