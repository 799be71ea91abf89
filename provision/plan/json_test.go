package plan

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/spec"
)

// An attribute is written as a JSON boolean or number only when the
// resource says it is one and its text reads as one; a hidden value is
// always the redaction string, so its kind leaks nothing. Each value reads
// back to the same JSON.
func TestValueJSON(t *testing.T) {
	for name, tc := range map[string]struct {
		v    Value
		want string
	}{
		"bool":             {Value{Value: resource.BoolVal(false)}, `false`},
		"number":           {Value{Value: resource.NumberVal(512)}, `512`},
		"text":             {Value{Value: resource.StringVal("512")}, `"512"`},
		"bool not a bool":  {Value{Value: resource.Value{Kind: resource.Bool, Text: "yes"}}, `"yes"`},
		"number padded":    {Value{Value: resource.Value{Kind: resource.Number, Text: "007"}}, `"007"`},
		"number empty":     {Value{Value: resource.Value{Kind: resource.Number}}, `""`},
		"sensitive bool":   {Value{Value: resource.Value{Kind: resource.Bool, Text: spec.Redacted}, Sensitive: true}, `"(sensitive value)"`},
		"quotes and angle": {Value{Value: resource.StringVal(`a"<b>&`)}, `"a\"<b>&"`},
	} {
		t.Run(name, func(t *testing.T) {
			got := string(valueJSON(tc.v))
			if got != tc.want {
				t.Fatalf("valueJSON(%+v) = %s, want %s", tc.v, got, tc.want)
			}
			back, err := attrsModel(map[string]json.RawMessage{"k": json.RawMessage(got)}, map[string]bool{"k": tc.v.Sensitive})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, string(valueJSON(back["k"]))); diff != "" {
				t.Errorf("read back (-want +got):\n%s", diff)
			}
		})
	}
}

// A plan file written by an earlier gpuform (format 2.3, when the plan
// layer looked attribute kinds up by name) reads back with each value's
// kind from its JSON type, and writes back byte for byte.
func TestPlanFileOfEarlierGpuform(t *testing.T) {
	old, err := os.ReadFile("testdata/tfplan-2.3.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFile(old)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]resource.Kind{}
	for _, rc := range f.Plan.Host("sim://hgx-h100-stale/1").ResourceChanges {
		for _, k := range []string{"held", "set_at_boot", "version", "loaded"} {
			if v, ok := rc.After[k]; ok {
				kinds[rc.Resource+"."+k] = v.Kind
			}
		}
	}
	want := map[string]resource.Kind{
		"driver_package.held": resource.Bool, "driver_package.version": resource.String,
		"cpu_governor.set_at_boot": resource.Bool, "nvidia_peermem.loaded": resource.Bool,
	}
	for k, w := range want {
		if kinds[k] != w {
			t.Errorf("%s read back as kind %d, want %d", k, kinds[k], w)
		}
	}
	path := filepath.Join(t.TempDir(), "tfplan")
	if err := WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	back, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(old), string(back)); diff != "" {
		t.Errorf("plan file written back differs (-old +new):\n%s", diff)
	}
}
