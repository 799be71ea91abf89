package plan

import (
	"encoding/json"
	"testing"

	"github.com/gpuform/gpuform/provision/resource"
)

// A create's "before" is null, as in Terraform's plan JSON, when the probe
// read nothing there; a create that replaces live values keeps them (it
// reads as an update), and an update always has its before.
func TestCreateBeforeNull(t *testing.T) {
	text := func(s string) Value { return Value{Value: resource.StringVal(s)} }
	for name, tc := range map[string]struct {
		action resource.Action
		before Attrs
		want   string
	}{
		"create, nothing read":    {resource.Create, nil, "null"},
		"create, empty values":    {resource.Create, Attrs{"args": text("")}, "null"},
		"create, live value":      {resource.Create, Attrs{"vm.swappiness": text("60")}, `{"vm.swappiness":"60"}`},
		"create, sensitive value": {resource.Create, Attrs{"token": {Value: resource.StringVal(""), Sensitive: true}}, `{"token":""}`},
		"update, empty value":     {resource.Update, Attrs{"args": text("")}, `{"args":""}`},
	} {
		t.Run(name, func(t *testing.T) {
			rc := ResourceChange{Change: resource.Change{Resource: "r", Action: tc.action}, Before: tc.before, After: Attrs{"args": text("x")}}
			b, err := json.Marshal(rc.toJSON())
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Before json.RawMessage `json:"before"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			if string(doc.Before) != tc.want {
				t.Errorf("before = %s, want %s\n%s", doc.Before, tc.want, b)
			}
		})
	}
}
