package kb

import (
	"testing"
)

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in      string
		driver  bool
		want    string
		len     int
		exact   bool
		wantErr bool
	}{
		{in: "550.127.08", driver: true, want: "550.127.08", len: 3, exact: true},
		// Two-part driver releases exist (CUDA 12.8 GA needs 570.26).
		{in: "570.26", driver: true, want: "570.26", len: 2, exact: true},
		// A bare branch floats over every release of the branch.
		{in: "550", driver: true, want: "550", len: 1, exact: false},
		{in: "R550", driver: true, want: "550", len: 1, exact: false},
		{in: "12.4.1", want: "12.4.1", len: 3, exact: true},
		// A CUDA major.minor floats over its updates.
		{in: "12.4", want: "12.4", len: 2, exact: false},
		{in: "2.21.5", want: "2.21.5", len: 3, exact: true},
		{in: "v1.14.0", want: "1.14.0", len: 3, exact: true},
		{in: "2.26.x", want: "2.26", len: 2, exact: false},
		// NGC images give CUDA with a build number.
		{in: "12.5.0.23", want: "12.5.0.23", len: 4, exact: true},
		{in: "", wantErr: true},
		{in: "12..4", wantErr: true},
		{in: "12.4.1.2.3", wantErr: true},
		{in: "12.4-1", wantErr: true},
		{in: "latest", wantErr: true},
		{in: "-1", wantErr: true},
		{in: "R", driver: true, wantErr: true},
		{in: "1234567890", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			parse := ParseVersion
			if tt.driver {
				parse = ParseDriverVersion
			}
			v, err := parse(tt.in)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parse(%q) = %v, want error", tt.in, v)
				}
				return
			}
			if err != nil {
				t.Fatalf("parse(%q): %v", tt.in, err)
			}
			if v.String() != tt.want || v.Len() != tt.len || v.IsExact() != tt.exact {
				t.Errorf("parse(%q) = %q len %d exact %v, want %q len %d exact %v",
					tt.in, v, v.Len(), v.IsExact(), tt.want, tt.len, tt.exact)
			}
		})
	}
}

func TestVersionCompare(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"550.127.08", "550.54.15", 1},
		{"550.54.14", "550.54.15", -1},
		{"570.26", "570.124.06", -1},
		{"12.4", "12.4.0", 0},
		{"12.10", "12.9", 1},
		{"2.21.5", "2.21.5", 0},
		{"13.0", "12.9.1", 1},
	}
	for _, tt := range tests {
		t.Run(tt.a+"_vs_"+tt.b, func(t *testing.T) {
			a, err := ParseVersion(tt.a)
			if err != nil {
				t.Fatal(err)
			}
			b, err := ParseVersion(tt.b)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Compare(b); got != tt.want {
				t.Errorf("Compare(%s, %s) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
			if got := b.Compare(a); got != -tt.want {
				t.Errorf("Compare(%s, %s) = %d, want %d", tt.b, tt.a, got, -tt.want)
			}
		})
	}
}

func TestVersionWithinAndTruncate(t *testing.T) {
	v, err := ParseVersion("12.4.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		prefix string
		want   bool
	}{{"12.4", true}, {"12", true}, {"12.4.1", true}, {"12.5", false}, {"12.4.1.0", false}, {"1", false}} {
		p, err := ParseVersion(tt.prefix)
		if err != nil {
			t.Fatal(err)
		}
		if got := v.Within(p); got != tt.want {
			t.Errorf("12.4.1 within %s = %v, want %v", tt.prefix, got, tt.want)
		}
	}
	d, err := ParseDriverVersion("550.127.08")
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Truncate(2).String(); got != "550.127" {
		t.Errorf("Truncate(2) = %q, want 550.127", got)
	}
	if got := d.Truncate(1); got.String() != "550" || got.IsExact() {
		t.Errorf("Truncate(1) = %q exact %v, want 550 not exact", got, got.IsExact())
	}
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"550.127.08", "570.26", "R550", "12.4.1", "2.26.x", "v1.14.0", "12.5.0.23", "", "1..2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			return
		}
		// A parsed version must print as something that parses back to an
		// equal version.
		w, err := ParseVersion(v.String())
		if err != nil {
			t.Fatalf("ParseVersion(%q) = %q, which does not parse: %v", s, v, err)
		}
		if v.Compare(w) != 0 || v.Len() != w.Len() {
			t.Fatalf("round trip of %q: %q vs %q", s, v, w)
		}
	})
}

func FuzzNormalizeGPUName(f *testing.F) {
	for _, s := range []string{"NVIDIA H100 80GB HBM3", "H100-SXM5-80GB", "Tesla V100-SXM2-32GB", "", "  nvidia  "} {
		f.Add(s)
	}
	kb := mustKB(f)
	f.Fuzz(func(t *testing.T, s string) {
		n := NormalizeGPUName(s)
		// Normalising is idempotent, so aliases and inputs meet in one form.
		if m := NormalizeGPUName(n); m != n {
			t.Fatalf("NormalizeGPUName(%q) = %q, again %q", s, n, m)
		}
		// Lookups of arbitrary names never panic and a unique hit is
		// consistent with the candidate list.
		g, ok := kb.GPU(s)
		if c := kb.GPUCandidates(s); ok && (len(c) != 1 || c[0].Name != g.Name) {
			t.Fatalf("GPU(%q) = %q but candidates %d", s, g.Name, len(c))
		}
	})
}
