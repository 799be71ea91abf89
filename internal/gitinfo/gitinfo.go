// Package gitinfo finds the git commit and remote of a directory by reading
// the repository's files: HEAD, refs, packed-refs and config.
//
// It never runs git. A spec directory may come from someone else, and a
// repository's config can make git run programs (core.fsmonitor), while
// gpuform never executes anything under a spec directory. Package gitinfo
// is not a git implementation: it does not read the index, so it cannot
// tell uncommitted changes, and it reads only what naming a spec's origin
// needs.
package gitinfo

import (
	"bufio"
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/internal/readlimit"
)

// Info is what a directory's repository says about it.
type Info struct {
	// Root is the repository's top directory.
	Root string
	// Commit is the commit HEAD points to; "" when it cannot be read (a
	// repository without commits).
	Commit string
	// Remote is the URL of the remote "origin" without any credentials;
	// "" when there is none.
	Remote string
	// Path is the directory's path inside the repository, with slashes;
	// "." for the top.
	Path string
}

// maxFile bounds each file read: refs and configs are small, and a file
// linked to /dev/zero must not be read forever.
const maxFile = 4 << 20

var commitPattern = lazyre.New(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

// Find returns the repository facts of dir; ok is false when dir is not in
// a git repository (or its .git cannot be read).
func Find(dir string) (Info, bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Info{}, false
	}
	for d := abs; ; d = filepath.Dir(d) {
		gitDir, ok := gitDirAt(d)
		if ok {
			rel, err := filepath.Rel(d, abs)
			if err != nil {
				return Info{}, false
			}
			common := gitDir
			if b, err := readlimit.ReadRegularFile(filepath.Join(gitDir, "commondir"), maxFile); err == nil {
				c := strings.TrimSpace(string(b))
				if !filepath.IsAbs(c) {
					c = filepath.Join(gitDir, c)
				}
				common = c
			}
			return Info{Root: d, Commit: head(gitDir, common), Remote: originURL(common), Path: filepath.ToSlash(rel)}, true
		}
		if filepath.Dir(d) == d {
			return Info{}, false
		}
	}
}

// gitDirAt returns the git directory of a work tree whose top is d: d/.git,
// or where a .git file ("gitdir: PATH", worktrees and submodules) points.
func gitDirAt(d string) (string, bool) {
	p := filepath.Join(d, ".git")
	fi, err := os.Stat(p)
	if err != nil {
		return "", false
	}
	if fi.IsDir() {
		return p, true
	}
	b, err := readlimit.ReadRegularFile(p, maxFile)
	if err != nil {
		return "", false
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return "", false
	}
	target = strings.TrimSpace(target)
	if !filepath.IsAbs(target) {
		target = filepath.Join(d, target)
	}
	return target, true
}

// head resolves HEAD to a commit: a detached HEAD holds it, a branch's ref
// is a loose file or a line of packed-refs.
func head(gitDir, common string) string {
	b, err := readlimit.ReadRegularFile(filepath.Join(gitDir, "HEAD"), maxFile)
	if err != nil {
		return ""
	}
	h := strings.TrimSpace(string(b))
	ref, ok := strings.CutPrefix(h, "ref: ")
	if !ok {
		if commitPattern.MatchString(h) {
			return h
		}
		return ""
	}
	ref = strings.TrimSpace(ref)
	if !strings.HasPrefix(ref, "refs/") || strings.Contains(ref, "..") {
		return ""
	}
	for _, dir := range []string{gitDir, common} {
		if b, err := readlimit.ReadRegularFile(filepath.Join(dir, filepath.FromSlash(ref)), maxFile); err == nil {
			if c := strings.TrimSpace(string(b)); commitPattern.MatchString(c) {
				return c
			}
		}
	}
	b, err = readlimit.ReadRegularFile(filepath.Join(common, "packed-refs"), maxFile)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		c, name, ok := strings.Cut(sc.Text(), " ")
		if ok && name == ref && commitPattern.MatchString(c) {
			return c
		}
	}
	return ""
}

// originURL reads remote "origin"'s url from the repository's config.
func originURL(common string) string {
	b, err := readlimit.ReadRegularFile(filepath.Join(common, "config"), maxFile)
	if err != nil {
		return ""
	}
	inOrigin := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			inOrigin = strings.ReplaceAll(line, " ", "") == `[remote"origin"]`
			continue
		}
		if !inOrigin {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == "url" {
			return withoutCredentials(strings.Trim(strings.TrimSpace(v), `"`))
		}
	}
	return ""
}

// withoutCredentials drops a user's password or token from a URL
// (https://user:TOKEN@host/repo): the URL is written onto every host.
func withoutCredentials(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		// scp-like "git@host:org/repo" carries no secret.
		return raw
	}
	if u.User != nil {
		if _, hasPassword := u.User.Password(); hasPassword || u.Scheme == "https" || u.Scheme == "http" {
			u.User = nil
		}
	}
	return u.String()
}
