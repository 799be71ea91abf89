package plan_test

import (
	"testing"

	"github.com/gpuform/gpuform/provision/plan"
)

// FuzzParseFile feeds arbitrary bytes to the plan-file reader: apply reads
// plan files that may have been edited or truncated, and must refuse them
// with an error, never panic.
func FuzzParseFile(f *testing.F) {
	f.Add([]byte(`{"kind":"gpuform-plan","format_version":"1.0","created_at":"2026-11-30T01:00:00Z","spec_dir":"/x","plan":{"format_version":"1.0","hosts":[{"host":"a","node":"n","facts_fingerprint":"00","resource_changes":[{"resource":"sysctl","actions":["update"],"before":{"k":"1"},"after":{"k":"2"},"reboot_required":false}]}],"nodes":[{"name":"n","hosts":["a"],"batch":1,"max_failures":0,"reboot":"never"}]}}`))
	f.Add([]byte(`{"kind":"gpuform-plan","format_version":"9.0","plan":{}}`))
	f.Add([]byte(`{"format_version":"1.0"}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, b []byte) {
		pf, err := plan.ParseFile(b)
		if err != nil {
			return
		}
		if pf.Plan == nil || pf.Kind != plan.FileKind {
			t.Fatalf("accepted a file without a plan or kind: %+v", pf)
		}
		// Whatever was accepted can be checked against a fresh plan.
		_ = plan.CheckSaved(pf.Plan, &plan.Plan{})
		for _, h := range pf.Plan.Hosts {
			if h != nil {
				_ = h.HasChanges()
			}
		}
		_ = pf.Plan.Groups()
	})
}
