package plan

import (
	"encoding/json"
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
		"bool":             {Value{Text: "false", Kind: resource.Bool}, `false`},
		"number":           {Value{Text: "512", Kind: resource.Number}, `512`},
		"text":             {Value{Text: "512"}, `"512"`},
		"bool not a bool":  {Value{Text: "yes", Kind: resource.Bool}, `"yes"`},
		"number padded":    {Value{Text: "007", Kind: resource.Number}, `"007"`},
		"number empty":     {Value{Kind: resource.Number}, `""`},
		"sensitive bool":   {Value{Text: spec.Redacted, Kind: resource.Bool, Sensitive: true}, `"(sensitive value)"`},
		"quotes and angle": {Value{Text: `a"<b>&`}, `"a\"<b>&"`},
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

// The resource layer's kinds reach the plan: a package hold is a boolean,
// a huge page count a number, a sysctl value text.
func TestAttrKinds(t *testing.T) {
	got := map[string]resource.Kind{}
	for _, c := range []struct{ res, attr string }{
		{resource.DriverPackage, "held"}, {resource.HugePages, "count"}, {resource.Sysctl, "vm.swappiness"}, {resource.NvidiaPeermem, "loaded"},
	} {
		got[c.res+"."+c.attr] = typedAttrs(c.res, map[string]string{c.attr: "1"})[c.attr].Kind
	}
	want := map[string]resource.Kind{"driver_package.held": resource.Bool, "hugepages.count": resource.Number, "sysctl.vm.swappiness": resource.String, "nvidia_peermem.loaded": resource.Bool}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
}
