package spec_test

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/spec"
)

// TestVarValueHCLSyntaxHint checks that a -var or GPUFORM_VAR_ value
// written as for a string, for a list, set, map or object variable, gets
// the value rewritten in HCL syntax, not the parser's "Variables not
// allowed".
func TestVarValueHCLSyntaxHint(t *testing.T) {
	cases := map[string]struct {
		typ  string
		vars []spec.VarArg
		env  []string
		want string
	}{
		"list from -var": {
			typ: "list(string)", vars: []spec.VarArg{{Value: "x=gpu001"}},
			want: `-var 'x=["gpu001"]'`,
		},
		"comma list from -var": {
			typ: "set(string)", vars: []spec.VarArg{{Value: "x=gpu001,gpu002"}},
			want: `-var 'x=["gpu001", "gpu002"]'`,
		},
		"numbers": {
			typ: "list(number)", vars: []spec.VarArg{{Value: "x=1,2"}},
			want: `-var 'x=[1, 2]'`,
		},
		"map": {
			typ: "map(string)", vars: []spec.VarArg{{Value: "x=a"}},
			want: `-var 'x={ key = "value" }'`,
		},
		"object": {
			typ: "object({ user = string, port = number })", vars: []spec.VarArg{{Value: "x=ops"}},
			want: `-var 'x={ port = ..., user = "..." }'`,
		},
		"environment": {
			typ: "list(string)", env: []string{"GPUFORM_VAR_x=gpu001"},
			want: `GPUFORM_VAR_x='["gpu001"]'`,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			src := "variable \"x\" {\n  type = " + c.typ + "\n}\n"
			_, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte(src)}, spec.LoadOptions{VarArgs: c.vars, Environ: c.env})
			var errs []string
			for _, d := range diags {
				if d.Severity == hcl.DiagError {
					errs = append(errs, d.Summary+": "+d.Detail)
				}
			}
			if len(errs) != 1 || !strings.Contains(errs[0], "Invalid value for variable") || !strings.Contains(errs[0], c.want) || strings.Contains(errs[0], "not allowed") {
				t.Errorf("errors:\n%s\nwant one \"Invalid value for variable\" with %s", strings.Join(errs, "\n"), c.want)
			}
		})
	}
}
