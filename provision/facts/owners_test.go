package facts

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// decodeJSON parses a JSON document for a structural comparison.
func decodeJSON(t *testing.T, text string) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, text)
	}
	return doc
}

func TestOwnersRoundTrip(t *testing.T) {
	recs := map[string]OwnerRecord{
		"sysctl": {Spec: "hgx-training", Commit: "4f1c", Source: "git@example.com:fleet.git//hgx", AppliedBy: "alice@ws"},
		"limits": {Spec: "team-b"},
	}
	text := FormatOwners(recs, nil)
	if text != FormatOwners(recs, nil) {
		t.Fatal("FormatOwners is not deterministic")
	}
	got := ParseOwners([]byte(text))
	if got.Error != "" || len(got.Resources) != 2 || got.Resources["sysctl"] != recs["sysctl"] || got.Resources["limits"] != recs["limits"] {
		t.Fatalf("round trip: %+v\n%s", got, text)
	}
}

func TestParseOwnersRefuses(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"not JSON":      {`sysctl=hgx`, "not owner records"},
		"newer format":  {`{"format_version":"3","resources":{}}`, `format_version "3"`},
		"unknown field": {`{"format_version":"1","resources":{},"extra":1}`, "not owner records"},
		// Format 1 has no key records: a file saying otherwise is not
		// guessed at.
		"key records in format 1":        {`{"format_version":"1","resources":{},"keys":{"sysctl":{"vm.swappiness":{"spec":"a"}}}}`, "has no key records"},
		"a keyed resource without keys":  {`{"format_version":"2","resources":{},"keys":{"sysctl":{}}}`, "name no key"},
		"a key without spec":             {`{"format_version":"2","resources":{},"keys":{"sysctl":{"vm.swappiness":{"spec":""}}}}`, "no spec"},
		"a key with a control character": {`{"format_version":"2","resources":{},"keys":{"sysctl":{"vm.swap\u0007":{"spec":"a"}}}}`, "control characters"},
		"no spec":                        {`{"format_version":"1","resources":{"sysctl":{"spec":""}}}`, "no spec"},
		// A record is printed in plans and written into file headers.
		"control character": {`{"format_version":"1","resources":{"sysctl":{"spec":"a\nb"}}}`, "control characters"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := ParseOwners([]byte(tc.in))
			if !strings.Contains(got.Error, tc.want) {
				t.Errorf("Error = %q, want it to contain %q", got.Error, tc.want)
			}
		})
	}
}

// TestOwnersKeyRecords: key records round-trip; a file with them is format
// 2, one without stays format 1 (which a gpuform before key records reads).
func TestOwnersKeyRecords(t *testing.T) {
	recs := map[string]OwnerRecord{"hugepages": {Spec: "b"}}
	hugepages := map[string]any{"hugepages": map[string]any{"spec": "b"}}
	want := map[string]any{"comment": ownersComment, "format_version": "1", "resources": hugepages}
	if diff := cmp.Diff(want, decodeJSON(t, FormatOwners(recs, map[string]map[string]OwnerRecord{"sysctl": {}}))); diff != "" {
		t.Errorf("records without keys (-want +got):\n%s", diff)
	}
	keys := map[string]map[string]OwnerRecord{"sysctl": {"vm.swappiness": {Spec: "a", Commit: "4f1c"}, "net.core.rmem_max": {Spec: "b"}}}
	text := FormatOwners(recs, keys)
	want = map[string]any{"comment": ownersComment, "format_version": "2", "resources": hugepages, "keys": map[string]any{
		"sysctl": map[string]any{"vm.swappiness": map[string]any{"spec": "a", "commit": "4f1c"}, "net.core.rmem_max": map[string]any{"spec": "b"}},
	}}
	if diff := cmp.Diff(want, decodeJSON(t, text)); diff != "" || text != FormatOwners(recs, keys) {
		t.Fatalf("records with keys (-want +got):\n%s\n%s", diff, text)
	}
	got := ParseOwners([]byte(text))
	if got.Error != "" || got.Resources["hugepages"] != recs["hugepages"] || len(got.Keys["sysctl"]) != 2 || got.Keys["sysctl"]["vm.swappiness"] != keys["sysctl"]["vm.swappiness"] || got.Keys["sysctl"]["net.core.rmem_max"].Spec != "b" {
		t.Fatalf("round trip: %+v\n%s", got, text)
	}
}

// TestKeyOwners: who owns each key of a keyed resource, from key records
// and from a record of the whole resource written before key records.
func TestKeyOwners(t *testing.T) {
	a, b := OwnerRecord{Spec: "a"}, OwnerRecord{Spec: "b"}
	tests := map[string]struct {
		owners   *Owners
		fileKeys []string
		want     map[string]string
	}{
		"no records":         {nil, []string{"x"}, map[string]string{}},
		"unreadable records": {&Owners{Error: "garbled", Keys: map[string]map[string]OwnerRecord{"sysctl": {"x": a}}}, []string{"x"}, map[string]string{}},
		"key records":        {&Owners{Keys: map[string]map[string]OwnerRecord{"sysctl": {"x": a, "z": b}}}, []string{"x", "y", "z"}, map[string]string{"x": "a", "z": "b"}},
		// The old per-resource record owned the whole drop-in: every key
		// in it is that spec's, none is nobody's to overwrite or drop.
		"a record of the whole resource": {&Owners{Resources: map[string]OwnerRecord{"sysctl": a}}, []string{"x", "y"}, map[string]string{"x": "a", "y": "a"}},
		"key records win over it":        {&Owners{Resources: map[string]OwnerRecord{"sysctl": a}, Keys: map[string]map[string]OwnerRecord{"sysctl": {"z": b}}}, []string{"x", "z"}, map[string]string{"x": "a", "z": "b"}},
		"another resource's record":      {&Owners{Resources: map[string]OwnerRecord{"limits": a}}, []string{"x"}, map[string]string{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := tc.owners.KeyOwners("sysctl", tc.fileKeys)
			if len(got) != len(tc.want) {
				t.Fatalf("KeyOwners = %v, want %v", got, tc.want)
			}
			for k, spec := range tc.want {
				if got[k].Spec != spec {
					t.Errorf("owner of %s = %q, want %q", k, got[k].Spec, spec)
				}
			}
		})
	}
}
