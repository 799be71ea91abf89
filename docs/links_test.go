package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/jsonformat"
)

// mdLink is an inline Markdown link or image: ](target) or ](target "title").
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// anchorOf is GitHub's heading anchor: lower case, every character but
// letters, digits, spaces, hyphens and underscores dropped, spaces made
// hyphens. Markdown emphasis and code marks go with the punctuation.
func anchorOf(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127 && isLetter(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isLetter(r rune) bool { return strings.ToLower(string(r)) != strings.ToUpper(string(r)) }

// proseLines yields the lines of a Markdown file that are outside fenced
// code blocks, with their 1-based numbers: a link in a code block is text.
func proseLines(doc string) (lines []string, numbers []int) {
	fence := false
	for i, l := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			continue
		}
		if !fence {
			lines = append(lines, l)
			numbers = append(numbers, i+1)
		}
	}
	return lines, numbers
}

// anchors are the anchors GitHub makes for a file's headings; a repeated
// heading gets -1, -2, ….
func anchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	lines, _ := proseLines(doc)
	for _, l := range lines {
		if m := regexp.MustCompile(`^#{1,6} (.*)$`).FindStringSubmatch(l); m != nil {
			a := anchorOf(m[1])
			if n := seen[a]; n > 0 {
				out[fmt.Sprintf("%s-%d", a, n)] = true
			} else {
				out[a] = true
			}
			seen[a]++
		}
	}
	return out
}

// brokenLinks lists every relative link in the named Markdown files (paths
// relative to root) that names no file, or an anchor its Markdown target
// does not have.
func brokenLinks(root string, files []string) ([]string, error) {
	var broken []string
	docs := map[string]string{}
	read := func(rel string) (string, error) {
		if d, ok := docs[rel]; ok {
			return d, nil
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		docs[rel] = string(b)
		return string(b), err
	}
	for _, f := range files {
		doc, err := read(f)
		if err != nil {
			return nil, err
		}
		lines, numbers := proseLines(doc)
		for i, l := range lines {
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`).MatchString(target) {
					continue // https:, mailto:: not ours to check offline
				}
				path, frag, _ := strings.Cut(target, "#")
				rel := f
				if path != "" {
					rel = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(f), path)))
					if strings.HasPrefix(rel, "../") || rel == ".." {
						broken = append(broken, fmt.Sprintf("%s:%d: %s leaves the repository", f, numbers[i], target))
						continue
					}
					if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
						broken = append(broken, fmt.Sprintf("%s:%d: %s: no such file", f, numbers[i], target))
						continue
					}
				}
				if frag == "" || !strings.HasSuffix(rel, ".md") {
					continue
				}
				tdoc, err := read(rel)
				if err != nil {
					return nil, err
				}
				if !anchors(tdoc)[frag] {
					broken = append(broken, fmt.Sprintf("%s:%d: %s: %s has no heading with anchor #%s", f, numbers[i], target, rel, frag))
				}
			}
		}
	}
	return broken, nil
}

// userDocs are README.md and every Markdown file under docs/.
func userDocs(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d Markdown files; the walk is broken", len(files))
	}
	return files
}

// TestRelativeLinksResolve: every relative link in README.md and the pages
// under docs/ names a file of the repository, and an anchor that file's
// headings make, so that moving a section cannot leave a dead link.
func TestRelativeLinksResolve(t *testing.T) {
	root := repoRoot(t)
	broken, err := brokenLinks(root, userDocs(t, root))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Error(b)
	}
}

// TestBrokenLinksFound keeps the link check able to fail: each kind of
// dead link is reported, and the live ones and code blocks are not.
func TestBrokenLinksFound(t *testing.T) {
	root := t.TempDir()
	for name, text := range map[string]string{
		"README.md": "# Top\n\n[ok](docs/page.md#a-b-c) [ok](#top) [ok](https://example.com/x)\n" +
			"[dead](docs/gone.md) [dead](docs/page.md#nope) [dead](#missing) [out](../x.md)\n" +
			"```\n[code](docs/gone-too.md)\n```\n",
		"docs/page.md": "# Page\n\n## A `b`: c\n\n## A `b`: c\n\n[ok](#a-b-c-1) [ok](../README.md#top)\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	broken, err := brokenLinks(root, []string{"README.md", "docs/page.md"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md:4: docs/gone.md: no such file",
		"README.md:4: docs/page.md#nope: docs/page.md has no heading with anchor #nope",
		"README.md:4: #missing: README.md has no heading with anchor #missing",
		"README.md:4: ../x.md leaves the repository",
	}
	if strings.Join(broken, "\n") != strings.Join(want, "\n") {
		t.Errorf("broken links:\n%s\nwant:\n%s", strings.Join(broken, "\n"), strings.Join(want, "\n"))
	}
	for heading, want := range map[string]string{
		"Slurm GRES: srun --gpu-bind=closest":        "slurm-gres-srun---gpu-bindclosest",
		"Bind jobs to their GPU's NUMA node and NIC": "bind-jobs-to-their-gpus-numa-node-and-nic",
		"See what would change: `gpuform plan`":      "see-what-would-change-gpuform-plan",
		"binding_unbound_gpus":                       "binding_unbound_gpus",
	} {
		if got := anchorOf(heading); got != want {
			t.Errorf("anchorOf(%q) = %q, want %q", heading, got, want)
		}
	}
}

// TestReadmeIsShort holds README.md to what a newcomer reads first (what
// gpuform is, install, the two commands, the quickstart, the command table,
// links); the rest belongs in the user guide.
func TestReadmeIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 300 {
		t.Errorf("README.md has %d lines; move detail into docs/guide/ and keep it to 300", n)
	}
	for _, section := range []string{"## Install", "## The two commands", "## Five-minute quickstart", "## Commands", "## User guide"} {
		if !strings.Contains(string(b), "\n"+section+"\n") {
			t.Errorf("README.md has no section %q", section)
		}
	}
}

// TestGuideIndexListsEveryPage: the guide's index links every page of the
// guide, and the README links the index, so no page is reachable only by
// knowing its name.
func TestGuideIndexListsEveryPage(t *testing.T) {
	root := repoRoot(t)
	index, err := os.ReadFile(filepath.Join(root, "docs/guide/README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "](docs/guide/README.md)") {
		t.Error("README.md does not link docs/guide/README.md")
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs/guide/*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 10 {
		t.Fatalf("found %d guide pages; the glob is broken", len(pages))
	}
	for _, p := range pages {
		name := filepath.Base(p)
		if name == "README.md" {
			continue
		}
		if !strings.Contains(string(index), "]("+name+")") {
			t.Errorf("docs/guide/README.md does not link %s", name)
		}
	}
}

// TestContractsStateFormatVersion: the contracts page states the JSON
// format_version every document carries, as internal/jsonformat defines it.
func TestContractsStateFormatVersion(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs/guide/contracts.md"))
	if err != nil {
		t.Fatal(err)
	}
	want := "every document carries the same one: `\"" + jsonformat.Version + "\"`"
	if !strings.Contains(strings.Join(strings.Fields(string(b)), " "), want) {
		t.Errorf("docs/guide/contracts.md does not say %s", want)
	}
}
