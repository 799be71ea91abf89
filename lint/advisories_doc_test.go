package lint

import (
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/kb"
)

// TestRulesDocToolkitExamples keeps the container_toolkit_version example of
// docs/rules.md honest: a release marked "# fine" has no advisory in the
// table, and one marked "# error: CVE-…" has exactly those. docs/rules.md
// once called 1.18.1 fine after CVE-2026-24260 covered it.
func TestRulesDocToolkitExamples(t *testing.T) {
	docs := readFile(t, filepath.Join("..", "docs", "rules.md"))
	i := strings.Index(docs, "\n## container_toolkit_version\n")
	if i < 0 {
		t.Fatal("no container_toolkit_version section")
	}
	section := docs[i+1:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	line := regexp.MustCompile(`nvidia_container_toolkit = "([0-9.]+)" \}\s+# (fine|error: (.*))`)
	examples := line.FindAllStringSubmatch(section, -1)
	if len(examples) < 2 {
		t.Fatalf("want at least a fine and an error example, got %d", len(examples))
	}
	fine := 0
	for _, ex := range examples {
		v, err := kb.ParseVersion(ex[1])
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, adv := range toolkitAdvisories() {
			if v.Compare(adv.fixed) < 0 {
				got = append(got, adv.id)
			}
		}
		sort.Strings(got)
		var want []string
		if ex[2] != "fine" {
			for _, id := range strings.Split(ex[3], ",") {
				want = append(want, strings.TrimSpace(id))
			}
		} else {
			fine++
		}
		sort.Strings(want)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("docs/rules.md: toolkit %s is marked %q; the advisory table says %v", ex[1], ex[2], got)
		}
	}
	if fine == 0 {
		t.Error("docs/rules.md: no toolkit example marked fine")
	}
}
