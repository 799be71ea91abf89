// Package docs holds gpuform's user guide (guide/), design, security and
// knowledge-base pages. Its tests keep the repository self-contained: no
// tracked file may cite a path outside it, and every relative link of the
// README and these pages resolves, so a newcomer with only a clone can
// follow every reference.
package docs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outsideRefs are the ways a file has cited material outside the
// repository: the team's original design document, its shared reference
// and fixture folders, and the reference pages by name. The words are
// split so that this file does not cite them itself.
var outsideRefs = regexp.MustCompile(`DESIGN` + `\.md|shared/(reference|fixtures)|\.\./shared|(^|[^A-Za-z0-9_.-])/work` + `/|\b(compat|verification|landscape|ux-conventions)` + `\.md\b`)

// verbatimCopies are files kept byte for byte as their authors wrote them
// (a copied provenance README); what they cite is part of the record.
var verbatimCopies = map[string]bool{
	"provision/verify/nccltest/testdata/SOURCES-upstream-README.md": true,
}

// repoRoot is the directory above docs/.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// trackedFiles lists the repository's files: git's index where the tree is
// a git checkout, else every file below the root except .git.
func trackedFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil && len(out) > 0 {
		var files []string
		for _, f := range bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0}) {
			files = append(files, string(f))
		}
		return files
	}
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestNoReferenceOutsideRepo fails when a tracked file cites a file outside
// the repository. Cite docs/design.md, the knowledge base
// (kb/data, docs/knowledge-base.md) or the public source instead.
func TestNoReferenceOutsideRepo(t *testing.T) {
	root := repoRoot(t)
	files := trackedFiles(t, root)
	if len(files) < 100 {
		t.Fatalf("found %d files under %s; the walk is broken", len(files), root)
	}
	for _, f := range files {
		if verbatimCopies[f] {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in the work tree, not yet in the index
		}
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := outsideRefs.FindString(line); m != "" {
				t.Errorf("%s:%d cites %q, outside the repository: cite docs/design.md, the knowledge base or the public source", f, i+1, m)
			}
		}
	}
}

// TestOutsideRefsPattern keeps the pattern able to fail: each of these
// lines is a citation the repository once had.
func TestOutsideRefsPattern(t *testing.T) {
	for _, line := range []string{
		"// Exit codes: one contract for every command (DESIGN" + ".md \"Contracts\").",
		"// shared/" + "reference/verification" + ".md section 2).",
		"same name in the shared fixture set `shared/" + "fixtures/nccl-tests/` of the",
		"  `/work" + "/shared/" + "fixtures/host/` (source:",
		"NVIDIA's data-center support pages (compat" + ".md section 1c).",
		"see .." + "/shared/" + "fixtures/",
	} {
		if !outsideRefs.MatchString(line) {
			t.Errorf("pattern misses %q", line)
		}
	}
	for _, line := range []string{
		"(docs/design.md, \"Exit codes\")",
		"kb/data/gpu-models.tsv",
		"copied from the team's fixture set",
		"https://example.com/work" + "/page.html",
	} {
		if outsideRefs.MatchString(line) {
			t.Errorf("pattern flags in-repo citation %q", line)
		}
	}
}

// TestArchitectureNamesEveryPackage keeps ARCHITECTURE.md's package table
// in step with the code: every directory holding Go files must have a row
// ("| `dir` |"), and every row must name a directory that exists.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	pkgs := map[string]bool{}
	for _, f := range trackedFiles(t, root) {
		if !strings.HasSuffix(f, ".go") || strings.Contains("/"+f, "/testdata/") {
			continue
		}
		pkgs[filepath.ToSlash(filepath.Dir(f))] = true
	}
	if len(pkgs) < 50 {
		t.Fatalf("found %d Go packages; the walk is broken", len(pkgs))
	}
	for p := range pkgs {
		if !strings.Contains(doc, "| `"+p+"` |") {
			t.Errorf("ARCHITECTURE.md has no row for package %s", p)
		}
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9_/]+)` \\|").FindAllStringSubmatch(doc, -1) {
		if !pkgs[m[1]] {
			t.Errorf("ARCHITECTURE.md has a row for %s, which holds no Go package", m[1])
		}
	}
}
