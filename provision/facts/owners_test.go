package facts

import (
	"strings"
	"testing"
)

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
		"no spec":       {`{"format_version":"1","resources":{"sysctl":{"spec":""}}}`, "no spec"},
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
