package bundle

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeBundle(t *testing.T) (string, *Manifest) {
	t.Helper()
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "repos/n-debian-12-amd64"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "repos/n-debian-12-amd64/libnccl2_2.21.5-1+cuda12.4_amd64.deb"), []byte("a package"), 0o644))
	m := &Manifest{Lock: strings.Repeat("ab", 32), Repos: []Repo{{
		Node: "n", Family: "debian", OS: "debian 12", Arch: "amd64", Dir: "repos/n-debian-12-amd64",
		Wanted:   []string{"libnccl2=2.21.5-1+cuda12.4"},
		Packages: []Package{{Name: "libnccl2", Version: "2.21.5-1+cuda12.4", File: "repos/n-debian-12-amd64/libnccl2_2.21.5-1+cuda12.4_amd64.deb"}},
	}}}
	must(m.AddFile(dir, "repos/n-debian-12-amd64/libnccl2_2.21.5-1+cuda12.4_amd64.deb", "file:/srv/gpuform-repo", "node n: libnccl2=2.21.5-1+cuda12.4"))
	must(WriteManifest(dir, m))
	return dir, m
}

// TestManifestRoundTripAndTamper: a written manifest reads back, verifies,
// and a replaced or truncated file is refused by size or hash.
func TestManifestRoundTripAndTamper(t *testing.T) {
	dir, _ := writeBundle(t)
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Verify(dir, ""); err != nil {
		t.Fatalf("an untouched bundle: %v", err)
	}
	f := filepath.Join(dir, "repos/n-debian-12-amd64/libnccl2_2.21.5-1+cuda12.4_amd64.deb")
	for name, content := range map[string]string{"replaced": "a pAckage", "truncated": "a pack"} {
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		err := m.Verify(dir, "repos/")
		if !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), "libnccl2_2.21.5-1+cuda12.4_amd64.deb") {
			t.Errorf("%s file: Verify = %v, want ErrTampered naming the file", name, err)
		}
	}
	if err := m.Verify(dir, "keys/"); err != nil {
		t.Errorf("Verify of another prefix read the tampered file: %v", err)
	}
}

// TestReadManifestRefuses: a path leaving the bundle, a bad hash, another
// major format, a package no file backs and a release that is not
// name=version (an option to the package manager) are refused, and so
// are a repository file where Stage writes the node's configuration (it
// would add a source) and two repositories for one node directory.
func TestReadManifestRefuses(t *testing.T) {
	for name, tc := range map[string]struct{ from, to, want string }{
		"path out":      {`"path": "repos/`, `"path": "../repos/`, "not a plain relative path"},
		"absolute dir":  {`"dir": "repos/`, `"dir": "/repos/`, "not a plain relative path"},
		"absolute path": {`"path": "repos/`, `"path": "/etc/../repos/`, "not a plain relative path"},
		"dotdot inside": {`"path": "repos/`, `"path": "repos/../../../etc/`, "not a plain relative path"},
		"dir out":       {`"dir": "repos/`, `"dir": "repos/../../`, "not a plain relative path"},
		"dir dotdot":    {`"dir": "repos/n-debian-12-amd64"`, `"dir": ".."`, "not a plain relative path"},
		"package out":   {`"file": "repos/`, `"file": "../repos/`, "does not list"},
		"hash":          {`"sha256": "`, `"sha256": "zz`, "not 64 hex digits"},
		"format":        {`"format_version": "2.`, `"format_version": "9.`, "format_version"},
		"unlisted file": {`"file": "repos/n-debian-12-amd64/libnccl2`, `"file": "repos/n-debian-12-amd64/libnccl3`, "does not list"},
		"negative size": {`"size": `, `"size": -`, "out of bounds"},
		"wanted option": {`"libnccl2=2.21.5-1+cuda12.4"
`, `"--setopt=reposdir=/etc/yum.repos.d"
`, "not a package=version release"},
		"apt source":    {`"files": [`, `"files": [{"path": "repos/n-debian-12-amd64/sources.list.d/mirror.list", "sha256": "abababababababababababababababababababababababababababababababab", "size": 1},`, "a name apply -bundle keeps"},
		"dnf repo file": {`"files": [`, `"files": [{"path": "repos/n-debian-12-amd64/repos.d/mirror.repo", "sha256": "abababababababababababababababababababababababababababababababab", "size": 1},`, "a name apply -bundle keeps"},
		"same node dir": {`"repos": [
    {`, `"repos": [
    {"dir": "other/n-debian-12-amd64"},
    {`, "the same directory of a node"},
		"package name": {`"name": "libnccl2"`, `"name": "-oAPT::Get::Simulate=0"`, "not a package name and version"},
	} {
		t.Run(name, func(t *testing.T) {
			dir, _ := writeBundle(t)
			p := filepath.Join(dir, ManifestName)
			b, _ := os.ReadFile(p)
			s := strings.Replace(string(b), tc.from, tc.to, 1)
			if s == string(b) {
				t.Fatalf("the manifest has no %q", tc.from)
			}
			if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := ReadManifest(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadManifest = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestRepoForAndMissing: the node's platform picks its repository; another
// OS is named; a release the bundle lacks is named with what it has.
func TestRepoForAndMissing(t *testing.T) {
	_, m := writeBundle(t)
	r, err := m.RepoFor("n", "debian", "debian 12", "amd64")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.RepoFor("n", "rhel", "rocky 9", "amd64"); err == nil || !strings.Contains(err.Error(), `covers node "n" on debian 12 amd64, not on rocky 9 amd64`) {
		t.Errorf("another OS: %v", err)
	}
	if _, err := m.RepoFor("m", "debian", "debian 12", "amd64"); err == nil || !strings.Contains(err.Error(), `no packages for node "m"`) {
		t.Errorf("another node: %v", err)
	}
	if got := r.Missing([]string{"libnccl2=2.21.5-1+cuda12.4"}); len(got) != 0 {
		t.Errorf("Missing of what it has = %v", got)
	}
	got := r.Missing([]string{"libnccl2=2.20.5-1+cuda12.4", "libnccl-dev=2.21.5-1+cuda12.4"})
	want := []string{"libnccl2 2.20.5-1+cuda12.4 (the bundle has 2.21.5-1+cuda12.4)", "libnccl-dev 2.21.5-1+cuda12.4 (the bundle has nothing of it)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Missing = %q, want %q", got, want)
	}
}

// TestVerifyRefusesWhatIsNotAFile: a directory bundle's listed file that
// is a FIFO or a device is refused at once, naming it, rather than
// waiting forever for a FIFO's writer (plan, apply and bundle -check hung)
// or reading a device up to MaxFile.
func TestVerifyRefusesWhatIsNotAFile(t *testing.T) {
	t.Parallel()
	for name, mk := range map[string]func(p string) error{
		"fifo":   func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"device": func(p string) error { return os.Symlink("/dev/zero", p) },
	} {
		t.Run(name, func(t *testing.T) {
			dir, m := writeBundle(t)
			f := filepath.Join(dir, filepath.FromSlash(m.Files[0].Path))
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
			if err := mk(f); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- m.Verify(dir, "") }()
			select {
			case err := <-done:
				if !errors.Is(err, ErrTampered) || !strings.Contains(err.Error(), m.Files[0].Path+": ") || !strings.Contains(err.Error(), "not a regular file") {
					t.Errorf("Verify = %v, want ErrTampered naming %s as not a regular file", err, m.Files[0].Path)
				}
			case <-time.After(5 * time.Second):
				if name == "fifo" {
					if w, err := os.OpenFile(f, os.O_WRONLY, 0); err == nil {
						w.Close() // lets the blocked open return
					}
				}
				t.Fatalf("Verify of a %s was still running after 5 s", name)
			}
		})
	}
}
