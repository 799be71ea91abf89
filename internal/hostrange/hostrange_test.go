package hostrange

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGroupBy(t *testing.T) {
	tests := map[string]struct {
		in   []string
		want [][]string
	}{
		"empty":          {nil, nil},
		"first seen":     {[]string{"b1", "a1", "b2", "a2", "c1"}, [][]string{{"b1", "b2"}, {"a1", "a2"}, {"c1"}}},
		"all one result": {[]string{"x1", "x2", "x3"}, [][]string{{"x1", "x2", "x3"}}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var got [][]string
			for _, g := range GroupBy(tt.in, func(s string) string { return s[:1] }) {
				if g.Key != g.Items[0][:1] {
					t.Errorf("key %q for %v", g.Key, g.Items)
				}
				got = append(got, g.Items)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFold(t *testing.T) {
	tests := map[string]struct {
		in   []string
		want string
	}{
		"range and single": {[]string{"gpu001", "gpu002", "gpu003", "gpu007"}, "gpu[001-003,007]"},
		"plain names":      {[]string{"login", "sim://x"}, "login, sim://x"},
		"domain kept":      {[]string{"n1.dc", "n2.dc"}, "n[1-2].dc"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Fold(tt.in); got != tt.want {
				t.Errorf("Fold(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestTitle(t *testing.T) {
	tests := map[string]struct {
		in   []string
		want string
	}{
		"one host":   {[]string{"gpu001"}, "gpu001"},
		"a range":    {[]string{"gpu001", "gpu002", "gpu004"}, "gpu[001-002,004] (3 hosts)"},
		"unfoldable": {[]string{"a.example.com", "b.example.com"}, "a.example.com, b.example.com (2 hosts)"},
	}
	for name, tc := range tests {
		if got := Title(tc.in); got != tc.want {
			t.Errorf("%s: Title(%q) = %q, want %q", name, tc.in, got, tc.want)
		}
	}
}
