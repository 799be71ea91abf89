package spec_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/gpuform/gpuform/spec"
)

// TestEvaluationLimits loads one-local specs whose evaluation would be far
// larger than their text. Each must fail with the named limit, on line 2
// where the expression is, instead of computing the value.
func TestEvaluationLimits(t *testing.T) {
	deep := func(open, mid, close string, n int) string {
		return strings.Repeat(open, n) + mid + strings.Repeat(close, n)
	}
	// big(n, s) is a list of 1000·n copies of s: range stops at 1024.
	big := func(n int, s string) string {
		return fmt.Sprintf(`flatten([for i in range(1000) : [for j in range(%d) : %q]])`, n, s)
	}
	cases := []struct {
		name    string
		expr    string
		summary string
		detail  string
	}{
		{"range of a billion", `range(1e9)`, "Value too large", "exceeds the limit of 100000"},
		{"setproduct", `setproduct(range(1000), range(1000), range(1000))`, "Value too large", "exceeds the limit of 100000"},
		{"join with a huge separator", `join(join("", ` + big(50, "xxxxxxxxxxxxxxxxxxxx") + `), range(1000))`, "Value too large", "exceeds the limit of 1 MiB"},
		{"format width", `format("%999999999d", 1)`, "Value too large", "exceeds the limit of 1 MiB"},
		{"formatlist width", `formatlist("%99999d", ` + big(50, "1") + `)`, "Value too large", "exceeds the limit of 16 MiB"},
		// An empty search string matches between every two characters.
		{"replace of the empty string", `replace(join("", ` + big(50, "xxxxxxxxxx") + `), "", join("", [for i in range(1000) : "yy"]))`, "Value too large", "exceeds the limit of 1 MiB"},
		{"regexreplace of the empty match", `regexreplace(join("", ` + big(50, "xxxxxxxxxx") + `), "", "$0$0$0")`, "Value too large", "exceeds the limit of 1 MiB"},
		{"indent", `indent(999999999, "a\nb")`, "Value too large", "exceeds the limit of 1 MiB"},
		{"strrev of a long string", `strrev(join("", ` + big(60, "xxxxxxxxxxxxxxxxxxxx") + `))`, "Value too large", "exceeds the limit of 1 MiB"},
		{"template for over a long string", `"%{for i in ` + big(40, "xxxxxxxxxxxxxxxxxxxx") + `}${i}${i}%{endfor}"`, "Value too large", "exceeds the limit of 1 MiB"},
		{"nested for", `[for x in range(1000) : [for y in range(1000) : x + y]]`, "Too many iterations", "exceeds the limit of 100000"},
		{"a list repeated by reference", `[for i in range(1000) : range(1000)]`, "Value too large", "exceeds the limit of 100000"},
		{"brackets", deep("[", "1", "]", 20000), "Nesting too deep", "exceeds the limit of 10000"},
		{"unary minus", strings.Repeat("-", 20000) + "1", "Nesting too deep", "exceeds the limit of 10000"},
		{"unary minus across lines in parentheses", "(" + strings.Repeat("-\n", 20000) + "1)", "Nesting too deep", "exceeds the limit of 10000"},
		{"templates", deep(`"${`, "1", `}"`, 20000), "Nesting too deep", "exceeds the limit of 10000"},
		{"template directives", `"` + deep("%{if true}", "x", "%{endif}", 20000) + `"`, "Nesting too deep", "exceeds the limit of 10000"},
		{"heredocs", deep("<<E\n${", "1", "}\nE\n", 20000), "Nesting too deep", "exceeds the limit of 10000"},
		{"splats", "var.x" + strings.Repeat("[*]", 20000), "Nesting too deep", "exceeds the limit of 10000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := "locals {\n  a = " + tc.expr + "\n}\n"
			_, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte(src)}, spec.LoadOptions{})
			if !diags.HasErrors() {
				t.Fatal("loaded without error")
			}
			var found bool
			for _, d := range diags {
				flat := strings.Join(strings.Fields(d.Detail), " ")
				if d.Summary == tc.summary && strings.Contains(flat, tc.detail) {
					found = true
					// Deep nesting is reported where the limit is passed.
					if d.Subject == nil || d.Subject.Start.Line < 2 {
						t.Errorf("diagnostic not in the expression: %v", d.Subject)
					}
				}
			}
			if !found {
				t.Errorf("want %q with %q; got %v", tc.summary, tc.detail, diags)
			}
		})
	}
}

// TestLengthLikeTerraform checks that length counts a string's characters
// (grapheme clusters) as Terraform's length does, and still counts
// collections.
func TestLengthLikeTerraform(t *testing.T) {
	cases := map[string]int64{
		`length("abc")`:              3,
		`length("héllo👋🏽")`:          6,
		`length([1, 2])`:             2,
		`length({ a = 1 })`:          1,
		`length(tolist(["a", "b"]))`: 2,
	}
	for expr, want := range cases {
		t.Run(expr, func(t *testing.T) {
			src := "locals {\n  a = " + expr + "\n}\n"
			cfg, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte(src)}, spec.LoadOptions{})
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			got := cfg.Locals["a"].Value
			if !got.RawEquals(cty.NumberIntVal(want)) {
				t.Errorf("got %#v, want %d", got, want)
			}
		})
	}
}

// TestLimitsAllowRealSpecs checks that the limits leave room for what real
// specs do: a few thousand hosts times eight GPUs, and short templates.
func TestLimitsAllowRealSpecs(t *testing.T) {
	src := `locals {
  hosts = flatten([for r in range(4) : [for i in range(1024) : format("gpu%d%04d", r, i)]])
  pairs = setproduct(local.hosts, range(8))
  names = [for p in local.pairs : "${p[0]}-gpu${p[1]}"]
  n     = length(local.names)
  all   = join(",", [for p in local.pairs : p[0]])
}
`
	cfg, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte(src)}, spec.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if got := cfg.Locals["n"].Value; !got.RawEquals(cty.NumberIntVal(4096 * 8)) {
		t.Errorf("n = %#v", got)
	}
}
