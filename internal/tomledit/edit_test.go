package tomledit

import (
	"strings"
	"testing"
)

func TestApply(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		edits    []Edit
		want     string
		err      string
	}{
		{name: "replace keeps comment and spacing",
			in:    "[a]\nk   =   'old'   # why\nz = 1\n",
			edits: []Edit{{Path: []string{"a", "k"}, Value: `"new"`}},
			want:  "[a]\nk   =   \"new\"   # why\nz = 1\n"},
		{name: "add after the table's last key, indented like it",
			in:    "[a]\n  x = 1\n  y = 2\n\n[b]\n  z = 3\n",
			edits: []Edit{{Path: []string{"a", "k"}, Value: "true"}},
			want:  "[a]\n  x = 1\n  y = 2\n  k = true\n\n[b]\n  z = 3\n"},
		{name: "new table after its siblings, quoted as they are",
			in:    "[p.'x'.r.runc]\n  t = 1\n\n  [p.'x'.r.runc.o]\n    b = 2\n\n[q]\n",
			edits: []Edit{{Path: []string{"p", "x", "r", "nv", "t"}, Value: "3"}},
			want:  "[p.'x'.r.runc]\n  t = 1\n\n  [p.'x'.r.runc.o]\n    b = 2\n\n[p.'x'.r.nv]\n  t = 3\n\n[q]\n"},
		// [p."x"] after [p."x".c]: a parent table the file never wrote.
		{name: "new parent table after its child",
			in:    "[p.\"x\".c]\n  k = 1\n",
			edits: []Edit{{Path: []string{"p", "x", "cdi"}, Value: "true"}},
			want:  "[p.\"x\".c]\n  k = 1\n\n[p.\"x\"]\n  cdi = true\n"},
		// A table made by dotted keys cannot get a header of its own.
		{name: "dotted table gets a dotted key",
			in:    "[a]\nreg.path = \"/x\"\n",
			edits: []Edit{{Path: []string{"a", "reg", "mirror"}, Value: `"m"`}},
			want:  "[a]\nreg.path = \"/x\"\nreg.mirror = \"m\"\n"},
		{name: "top-level key goes before the first table",
			in:    "# hi\n[a]\nx = 1\n",
			edits: []Edit{{Path: []string{"version"}, Value: "2"}},
			want:  "# hi\nversion = 2\n[a]\nx = 1\n"},
		{name: "delete removes the whole line",
			in:    "[a]\nx = 1\nk = \"nvidia\" # set by hand\ny = 2\n",
			edits: []Edit{{Path: []string{"a", "k"}, Delete: true}},
			want:  "[a]\nx = 1\ny = 2\n"},
		{name: "no final newline",
			in:    "[a]\nx = 1",
			edits: []Edit{{Path: []string{"a", "k"}, Value: "2"}},
			want:  "[a]\nx = 1\nk = 2\n"},
		{name: "CRLF stays CRLF",
			in:    "[a]\r\nx = 1\r\n",
			edits: []Edit{{Path: []string{"a", "k"}, Value: "2"}},
			want:  "[a]\r\nx = 1\r\nk = 2\r\n"},
		{name: "multi-line array value replaced whole",
			in:    "[a]\nk = [\n  1,\n  2,\n] # c\nz = 0\n",
			edits: []Edit{{Path: []string{"a", "k"}, Value: "[3]"}},
			want:  "[a]\nk = [3] # c\nz = 0\n"},
		{name: "inline table is refused",
			in:    "[a]\nnv = { t = 1 }\n",
			edits: []Edit{{Path: []string{"a", "nv", "t"}, Value: "2"}},
			err:   "inline value"},
		{name: "a table is not a value",
			in:    "[a.k]\nx = 1\n",
			edits: []Edit{{Path: []string{"a", "k"}, Value: "2"}},
			err:   "is a table"},
		{name: "array of tables is refused",
			in:    "[[a]]\nx = 1\n",
			edits: []Edit{{Path: []string{"a", "y"}, Value: "2"}},
			err:   "array of tables"},
		{name: "a value spanning lines is refused",
			in:    "[a]\n",
			edits: []Edit{{Path: []string{"a", "k"}, Value: "1\n[evil]"}},
			err:   "not one line"},
		{name: "not TOML",
			in:    "[a\n",
			edits: []Edit{{Path: []string{"a", "k"}, Value: "1"}},
			err:   "line 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Apply([]byte(tc.in), tc.edits)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one containing %q (got %q)", err, tc.err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	d, err := Parse([]byte("version = 3\n[p.'x'.c]\nname = 'ru\\nnc'\nsub.flag = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path       []string
		kind, text string
	}{
		{[]string{"version"}, "Integer", "3"},
		// A literal string keeps its backslash.
		{[]string{"p", "x", "c", "name"}, "String", `ru\nnc`},
		{[]string{"p", "x", "c", "sub", "flag"}, "Bool", "true"},
	} {
		v, ok := d.Lookup(tc.path...)
		if !ok || v.Kind != tc.kind || v.Text != tc.text {
			t.Errorf("Lookup(%v) = %+v, %v; want %s %q", tc.path, v, ok, tc.kind, tc.text)
		}
	}
	if _, ok := d.Lookup("p", "x", "c"); ok {
		t.Error("a table looked up as a value")
	}
}

// FuzzApply: whatever the document, Apply either refuses or returns TOML
// that holds the key, and never panics.
func FuzzApply(f *testing.F) {
	f.Add([]byte("[a]\nx = 1\n"))
	f.Add([]byte("version = 2\n[plugins.\"c\".containerd.runtimes.runc]\n  t = 'x'\n"))
	f.Add([]byte("a.b = { c = 1 }\n[[d]]\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		out, err := Apply(doc, []Edit{{Path: []string{"plugins", "c", "containerd", "runtimes", "nvidia", "t"}, Value: `"v"`}})
		if err != nil {
			return
		}
		d, err := Parse(out)
		if err != nil {
			t.Fatalf("output does not parse: %v\n%s", err, out)
		}
		if v, ok := d.Lookup("plugins", "c", "containerd", "runtimes", "nvidia", "t"); !ok || v.Text != "v" {
			t.Fatalf("key not set: %+v\n%s", v, out)
		}
	})
}
