package cpulist

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    []int
		wantErr bool
	}{
		"ranges and singles": {in: "0-2,7,9-10", want: []int{0, 1, 2, 7, 9, 10}},
		// The kernel writes no spaces; a hand-written list may.
		"spaces": {in: " 0-1, 4 \n", want: []int{0, 1, 4}},
		// A memory-only NUMA node has no CPUs; that is not an error.
		"empty":    {in: "", want: nil},
		"letters":  {in: "a", wantErr: true},
		"reversed": {in: "3-1", wantErr: true},
		"open":     {in: "1-", wantErr: true},
		"negative": {in: "-1", wantErr: true},
		// A corrupted file must not allocate gigabytes.
		"huge": {in: "0-999999999", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Parse(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Parse(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}
