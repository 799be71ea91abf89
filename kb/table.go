package kb

import (
	"fmt"
	"io/fs"
	"strings"
)

// table is one TSV data file: a header line of column names and rows of
// tab-separated cells. Cells are prose; the typed parsers in this package
// read them.
type table struct {
	file string
	cols map[string]int
	rows []row
}

// row is one data line of a table.
type row struct {
	t     *table
	line  int
	cells []string
}

// readTable loads name from fsys. Every row must have exactly as many cells
// as the header, so a stray or missing tab is reported at its line.
func readTable(fsys fs.FS, name string, required ...string) (*table, error) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	t := &table{file: name, cols: map[string]int{}}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) == 0 || lines[0] == "" {
		return nil, fmt.Errorf("%s:1: empty file, want a header line", name)
	}
	header := strings.Split(strings.TrimRight(lines[0], "\r"), "\t")
	for i, h := range header {
		h = strings.TrimSpace(h)
		if _, dup := t.cols[h]; dup {
			return nil, fmt.Errorf("%s:1: duplicate column %q", name, h)
		}
		t.cols[h] = i
	}
	for _, c := range required {
		if _, ok := t.cols[c]; !ok {
			return nil, fmt.Errorf("%s:1: missing column %q", name, c)
		}
	}
	for i, l := range lines[1:] {
		l = strings.TrimRight(l, "\r")
		if strings.TrimSpace(l) == "" {
			continue
		}
		cells := strings.Split(l, "\t")
		if len(cells) != len(header) {
			return nil, fmt.Errorf("%s:%d: %d cells, header has %d", name, i+2, len(cells), len(header))
		}
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		t.rows = append(t.rows, row{t: t, line: i + 2, cells: cells})
	}
	return t, nil
}

// get returns the cell of column col ("" when the table has no such column;
// required columns are checked by readTable).
func (r row) get(col string) string {
	i, ok := r.t.cols[col]
	if !ok {
		return ""
	}
	return r.cells[i]
}

// errorf makes an error that names the row's file and line.
func (r row) errorf(format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", r.t.file, r.line, fmt.Sprintf(format, args...))
}

// fact builds the Fact of the row from its status and sources columns.
func (r row) fact(status Status, sourcesCol, noteCol string) Fact {
	return Fact{
		Status:  status,
		Sources: splitSources(r.get(sourcesCol)),
		File:    r.t.file,
		Line:    r.line,
		Note:    r.get(noteCol),
	}
}

// status parses the status cell of column col.
func (r row) status(col string) (Status, error) {
	st, err := ParseStatus(r.get(col))
	if err != nil {
		return StatusUnknown, r.errorf("column %s: %v", col, err)
	}
	return st, nil
}
