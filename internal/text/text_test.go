package text

import "testing"

func TestIsIdent(t *testing.T) {
	tests := map[string]bool{
		"PATH": true, "_x1": true, "GPUFORM_ROOT": true,
		"": false, "1A": false, "A-B": false, "A B": false, "Ä": false,
		// A name that would run code in a shell assignment.
		"X=$(id)": false,
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			if got := IsIdent(in); got != want {
				t.Errorf("IsIdent(%q) = %v, want %v", in, got, want)
			}
		})
	}
}

func TestFirstLine(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"one line":      {"E: unable to locate package", "E: unable to locate package"},
		"leading blank": {"\n  \n  E: broken\nmore", "E: broken"},
		"empty":         {"", ""},
		"only space":    {" \n\t\n", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := FirstLine(tc.in); got != tc.want {
				t.Errorf("FirstLine(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
