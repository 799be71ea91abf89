package lint

import (
	"embed"
	"strconv"
	"strings"
	"sync"

	"github.com/gpuform/gpuform/kb"
)

// dataFS holds lint's own small tables (see data/README.md); embed.FS is
// read-only, so this is not mutable state.
//
//go:embed data/*.tsv
var dataFS embed.FS

// advisory is one security advisory of the NVIDIA Container Toolkit.
type advisory struct {
	id    string
	fixed kb.Version
	note  string
	fact  kb.Fact
}

// toolkitAdvisories returns the parsed advisories table. It is parsed once;
// the table is compiled in and TestAdvisoriesParse checks every row, so a
// row that does not parse is skipped here rather than failing a user's run.
var toolkitAdvisories = sync.OnceValue(func() []advisory {
	out, _ := parseAdvisories()
	return out
})

func parseAdvisories() ([]advisory, error) {
	b, err := dataFS.ReadFile("data/container-toolkit-advisories.tsv")
	if err != nil {
		return nil, err
	}
	var out []advisory
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for i, l := range lines[1:] {
		c := strings.Split(l, "\t")
		if len(c) != 5 {
			return out, &tableError{line: i + 2, msg: "want 5 cells"}
		}
		v, err := kb.ParseVersion(c[1])
		if err != nil || !v.IsExact() {
			return out, &tableError{line: i + 2, msg: "fixed_in is not an exact release"}
		}
		st, err := kb.ParseStatus(c[3])
		if err != nil {
			return out, &tableError{line: i + 2, msg: err.Error()}
		}
		var srcs []string
		for _, s := range strings.Split(c[4], ";") {
			if s = strings.TrimSpace(s); s != "" {
				srcs = append(srcs, s)
			}
		}
		out = append(out, advisory{id: c[0], fixed: v, note: c[2], fact: kb.Fact{Status: st, Sources: srcs, File: "lint/data/container-toolkit-advisories.tsv", Line: i + 2}})
	}
	return out, nil
}

type tableError struct {
	line int
	msg  string
}

func (e *tableError) Error() string {
	return "data/container-toolkit-advisories.tsv:" + strconv.Itoa(e.line) + ": " + e.msg
}
