package jsonformat

import "testing"

func TestCompatible(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{Version, true},
		{Major() + ".7", true},
		{Major(), true},
		{"1.0", false},
		{"1", false},
		{"", false},
		{"20.0", false},
	} {
		if got := Compatible(tc.v); got != tc.want {
			t.Errorf("Compatible(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}
