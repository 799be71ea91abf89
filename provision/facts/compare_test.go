package facts

import "testing"

// TestCompareVersions orders the versions NVIDIA's repositories publish
// as apt and dnf do.
func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"580.95.05-1", "580.65.06-1", 1},
		{"580.159.03-0ubuntu1", "580.95.05-0ubuntu1", 1},
		{"1:4.2.3-1", "4.5.0-1", 1},
		{"2.21.5-1+cuda12.4", "2.21.5-1+cuda12.4", 0},
		{"4.1.2-1", "4.1.2-2", -1},
		{"1.0~rc1-1", "1.0-1", -1},
		{"3:580.95.05-1.el9", "3:580.95.05-1.el8", 1},
	} {
		if got := CompareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := CompareVersions(tc.b, tc.a); got != -tc.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", tc.b, tc.a, got, -tc.want)
		}
	}
}
