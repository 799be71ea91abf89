package tomledit

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2/unstable"
)

// Doc is a parsed TOML document: its bytes and where each top-level
// expression (a table header or a key/value line) lies in them.
type Doc struct {
	src   []byte
	exprs []expr
	// nl is the document's line ending ("\n" or "\r\n"), used for the lines
	// an edit adds.
	nl string
}

// expr is one table header or key/value expression.
type expr struct {
	// table is true for a [table] header, array for a [[table]] header.
	table, array bool
	// path is the table a header names, or the full path of a key (the
	// path of the table it is in, then its own dotted parts).
	path []string
	// raw are a header's key parts as written ('a', "a", a), so a table
	// added beside it is quoted the same way.
	raw []string
	// in is the path of the table a key/value is in.
	in []string
	// start and end are the expression's whole lines: from the start of
	// its first line to after the newline of its last.
	start, end int
	// indent is the blank text before the expression on its first line.
	indent string
	// valStart and valEnd are a key/value's value bytes.
	valStart, valEnd int
	// kind and data are the value's kind and, for a string, its
	// unescaped text; otherwise its raw text.
	kind unstable.Kind
	data string
}

// Value is a key's value as the document writes it.
type Value struct {
	// Kind is the TOML kind ("String", "Bool", "Integer", "Array", ...).
	Kind string
	// Text is a string's unescaped text, or the raw TOML of any other value.
	Text string
}

// Parse reads a TOML document. An empty document is valid.
func Parse(src []byte) (*Doc, error) {
	d := &Doc{src: src, nl: "\n"}
	if bytes.Contains(src, []byte("\r\n")) {
		d.nl = "\r\n"
	}
	p := unstable.Parser{}
	p.Reset(src)
	var table []string
	for p.NextExpression() {
		n := p.Expression()
		e, err := d.expr(&p, n, table)
		if err != nil {
			return nil, err
		}
		if e.table || e.array {
			table = e.path
		}
		d.exprs = append(d.exprs, e)
	}
	if err := p.Error(); err != nil {
		var perr *unstable.ParserError
		if errors.As(err, &perr) && len(perr.Highlight) > 0 {
			sh := p.Shape(p.Range(perr.Highlight))
			return nil, fmt.Errorf("line %d column %d: %s", sh.Start.Line, sh.Start.Column, perr.Message)
		}
		return nil, err
	}
	return d, nil
}

func (d *Doc) expr(p *unstable.Parser, n *unstable.Node, table []string) (expr, error) {
	var e expr
	var first, last unstable.Range
	var keys []string
	for it := n.Key(); it.Next(); {
		k := it.Node()
		if len(keys) == 0 {
			first = k.Raw
		}
		last = k.Raw
		keys = append(keys, string(k.Data))
		e.raw = append(e.raw, string(d.src[k.Raw.Offset:k.Raw.Offset+k.Raw.Length]))
	}
	switch n.Kind {
	case unstable.Table, unstable.ArrayTable:
		e.table, e.array = n.Kind == unstable.Table, n.Kind == unstable.ArrayTable
		e.path = keys
		e.start = lineStart(d.src, int(first.Offset))
		// The header's '[' (or "[[") and blanks precede its first key.
		open := bytes.LastIndexByte(d.src[e.start:first.Offset], '[')
		if e.array {
			open = bytes.Index(d.src[e.start:first.Offset], []byte("[["))
		}
		if open < 0 {
			return e, fmt.Errorf("table header at byte %d has no '['", first.Offset)
		}
		e.indent = string(d.src[e.start : e.start+open])
		e.end = lineEnd(d.src, int(last.Offset+last.Length))
	case unstable.KeyValue:
		e.in = table
		e.path = append(slices.Clone(table), keys...)
		kv := n.Raw
		e.start = lineStart(d.src, int(kv.Offset))
		e.indent = string(d.src[e.start:kv.Offset])
		e.end = lineEnd(d.src, int(kv.Offset+kv.Length))
		v := n.Value()
		e.kind = v.Kind
		// The value starts after the '=' that follows the key; arrays and
		// inline tables carry no range of their own but end the expression.
		eq := bytes.IndexByte(d.src[last.Offset+last.Length:kv.Offset+kv.Length], '=')
		if eq < 0 {
			return e, fmt.Errorf("key %s at byte %d has no '='", strings.Join(keys, "."), kv.Offset)
		}
		e.valStart = int(last.Offset+last.Length) + eq + 1
		for e.valStart < len(d.src) && (d.src[e.valStart] == ' ' || d.src[e.valStart] == '\t') {
			e.valStart++
		}
		e.valEnd = int(kv.Offset + kv.Length)
		if v.Kind == unstable.String {
			e.data = string(v.Data)
		} else {
			e.data = string(d.src[e.valStart:e.valEnd])
		}
	default:
		return e, fmt.Errorf("unexpected %s expression", n.Kind)
	}
	return e, nil
}

func lineStart(b []byte, at int) int {
	return bytes.LastIndexByte(b[:at], '\n') + 1
}

func lineEnd(b []byte, at int) int {
	i := bytes.IndexByte(b[at:], '\n')
	if i < 0 {
		return len(b)
	}
	return at + i + 1
}

// Lookup returns the value of the key at path (tables, then the key).
// Keys held in inline tables or arrays of tables are not looked into.
func (d *Doc) Lookup(path ...string) (Value, bool) {
	for _, e := range d.exprs {
		if !e.table && !e.array && slices.Equal(e.path, path) {
			return Value{Kind: e.kind.String(), Text: e.data}, true
		}
	}
	return Value{}, false
}

// HasTable reports whether the document defines the table at path, by a
// header or through the keys under it.
func (d *Doc) HasTable(path ...string) bool {
	for _, e := range d.exprs {
		if len(e.path) > len(path) && slices.Equal(e.path[:len(path)], path) || e.table && slices.Equal(e.path, path) {
			return true
		}
	}
	return false
}

// Bytes are the document's source, for readers that decode it whole.
func (d *Doc) Bytes() []byte { return d.src }

// Empty reports whether the document has no table and no key (only
// comments and blank lines, or nothing).
func (d *Doc) Empty() bool { return len(d.exprs) == 0 }

// Edit is one change to a document: the key at Path set to Value (TOML
// text, such as `"io.containerd.runc.v2"` or `true`), or removed when
// Delete is true.
type Edit struct {
	// Path is the tables, then the key.
	Path []string
	// Value is the TOML text of the new value.
	Value string
	// Delete removes the key's line instead.
	Delete bool
}

// Apply makes the edits in order and returns the new document. Every byte
// outside the lines of the keys it sets is kept; a key that is absent is
// added to its table, and a table that is absent is added after the tables
// it is closest to, indented as they are.
func Apply(src []byte, edits []Edit) ([]byte, error) {
	out := src
	for _, ed := range edits {
		d, err := Parse(out)
		if err != nil {
			return nil, err
		}
		if out, err = d.apply(ed); err != nil {
			return nil, fmt.Errorf("%s: %w", FormatKey(ed.Path), err)
		}
	}
	// The result must still be TOML, and hold what was asked.
	d, err := Parse(out)
	if err != nil {
		return nil, fmt.Errorf("edited document does not parse (a bug in gpuform): %w", err)
	}
	for _, ed := range edits {
		_, ok := d.Lookup(ed.Path...)
		if ok == ed.Delete {
			return nil, fmt.Errorf("%s: edit did not take (a bug in gpuform)", FormatKey(ed.Path))
		}
	}
	return out, nil
}

func (d *Doc) apply(ed Edit) ([]byte, error) {
	if len(ed.Path) == 0 {
		return nil, errors.New("empty key")
	}
	if !ed.Delete {
		// A value is one line of TOML, so the lines around it stay theirs.
		if strings.ContainsAny(ed.Value, "\r\n") || strings.TrimSpace(ed.Value) == "" {
			return nil, fmt.Errorf("value %q is not one line of TOML", ed.Value)
		}
	}
	table, key := ed.Path[:len(ed.Path)-1], ed.Path[len(ed.Path)-1]
	for _, e := range d.exprs {
		switch {
		case e.table || e.array:
			if len(e.path) >= len(ed.Path) && slices.Equal(e.path[:len(ed.Path)], ed.Path) {
				return nil, errors.New("is a table in the file, not a value; gpuform will not replace it")
			}
			if e.array && len(e.path) <= len(table) && slices.Equal(table[:len(e.path)], e.path) {
				return nil, fmt.Errorf("lies under the array of tables [[%s]]; gpuform will not edit it", FormatKey(e.path))
			}
		case slices.Equal(e.path, ed.Path):
			if ed.Delete {
				return splice(d.src, e.start, e.end, ""), nil
			}
			return splice(d.src, e.valStart, e.valEnd, ed.Value), nil
		case len(e.path) < len(ed.Path) && slices.Equal(ed.Path[:len(e.path)], e.path):
			return nil, fmt.Errorf("is inside the inline value of %s; gpuform will not rewrite it: write %s as a [table], then plan again", FormatKey(e.path), FormatKey(e.path))
		case len(e.path) > len(ed.Path) && slices.Equal(e.path[:len(ed.Path)], ed.Path):
			return nil, fmt.Errorf("is a table in the file (%s), not a value; gpuform will not replace it", FormatKey(e.path))
		}
	}
	if ed.Delete {
		return d.src, nil
	}
	// The table's own header: the key goes after the table's last key.
	for i, e := range d.exprs {
		if !e.table || !slices.Equal(e.path, table) {
			continue
		}
		at, indent := e.end, e.indent+d.step()
		for _, k := range d.exprs[i+1:] {
			if k.table || k.array {
				break
			}
			at, indent = k.end, k.indent
		}
		return d.insert(at, indent+FormatKey([]string{key})+" = "+ed.Value), nil
	}
	// A table made by dotted keys under a parent: the key goes beside
	// them, dotted the same way (a header for it would be invalid TOML).
	for i := len(d.exprs) - 1; i >= 0; i-- {
		e := d.exprs[i]
		if e.table || e.array || len(e.path) <= len(table) || !slices.Equal(e.path[:len(table)], table) {
			continue
		}
		if len(e.in) > len(table) {
			continue
		}
		return d.insert(e.end, e.indent+FormatKey(ed.Path[len(e.in):])+" = "+ed.Value), nil
	}
	if len(table) == 0 {
		// A top-level key goes before the first table.
		at := len(d.src)
		for _, e := range d.exprs {
			if e.table || e.array {
				at = e.start
				break
			}
		}
		return d.insert(at, FormatKey([]string{key})+" = "+ed.Value), nil
	}
	return d.newTable(table, key, ed.Value), nil
}

// newTable adds [table] with its key after the section of the table that
// shares the longest leading path with it (its parent, a sibling), or at
// the end of the document.
func (d *Doc) newTable(table []string, key, value string) []byte {
	best, at, indent := 0, len(d.src), ""
	section := -1
	for i, e := range d.exprs {
		if !e.table && !e.array {
			continue
		}
		if n := commonPrefix(e.path, table); n > 0 && n >= best {
			if n > best {
				indent = ""
			}
			best, section = n, i
			switch {
			case len(e.path) == len(table):
				// A sibling: indented as it is.
				indent = e.indent
			case n == len(e.path) && indent == "":
				// An ancestor: a step deeper for each level between.
				indent = e.indent + strings.Repeat(d.step(), len(table)-n)
			}
		}
	}
	if section >= 0 {
		// After the last section nested in the chosen one, so the new
		// table does not split a group of sub-tables.
		parent := d.exprs[section].path[:best]
		at = d.exprs[section].end
		for _, e := range d.exprs[section+1:] {
			if (e.table || e.array) && !(len(e.path) >= len(parent) && slices.Equal(e.path[:len(parent)], parent)) {
				break
			}
			at = e.end
		}
	}
	header := FormatKey(table)
	if section >= 0 {
		// The shared part written as the file writes it.
		parts := slices.Clone(d.exprs[section].raw[:best])
		if best < len(table) {
			parts = append(parts, FormatKey(table[best:]))
		}
		// (best == len(table): the table is a parent of one the file
		// has, [a.b] after [a.b.c], which TOML allows.)
		header = strings.Join(parts, ".")
	}
	text := indent + "[" + header + "]" + d.nl + indent + d.step() + FormatKey([]string{key}) + " = " + value
	if at > 0 && !bytes.HasSuffix(d.src[:at], []byte(d.nl+d.nl)) {
		text = d.nl + text
	}
	return d.insert(at, text)
}

// step is the indentation the document puts under a table header, judged
// from its first table with a key (containerd's default config indents by
// two spaces a level; a hand-written file often not at all).
func (d *Doc) step() string {
	for i, e := range d.exprs {
		if e.table && i+1 < len(d.exprs) && !d.exprs[i+1].table && !d.exprs[i+1].array {
			if k := d.exprs[i+1].indent; len(k) > len(e.indent) && strings.HasPrefix(k, e.indent) {
				return k[len(e.indent):]
			}
			return ""
		}
	}
	return ""
}

// insert puts one line at byte at, which is the start of a line (or the
// end of a document that may lack its last newline).
func (d *Doc) insert(at int, line string) []byte {
	prefix := ""
	if at > 0 && d.src[at-1] != '\n' {
		prefix = d.nl
	}
	return splice(d.src, at, at, prefix+line+d.nl)
}

func splice(b []byte, from, to int, with string) []byte {
	out := make([]byte, 0, len(b)-(to-from)+len(with))
	out = append(out, b[:from]...)
	out = append(out, with...)
	return append(out, b[to:]...)
}

func commonPrefix(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// FormatKey writes a dotted key, quoting the parts that are not bare keys.
func FormatKey(path []string) string {
	parts := make([]string, len(path))
	for i, p := range path {
		parts[i] = p
		if !bareKey(p) {
			parts[i] = String(p)
		}
	}
	return strings.Join(parts, ".")
}

// BareKey reports whether s can be written as a TOML key without quotes.
func BareKey(s string) bool { return bareKey(s) }

func bareKey(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// String writes s as a TOML basic string.
func String(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, c)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
