package transport

import "testing"

func TestHostText(t *testing.T) {
	tests := map[string]struct{ in, want string }{
		"plain":            {"E: Unable to locate package x", "E: Unable to locate package x"},
		"forged line":      {"\x1b[2K\rOK: all checks passed", `\x1b[2K\rOK: all checks passed`},
		"cursor up":        {"fail\x1b[1A\x1b[2Kpass", `fail\x1b[1A\x1b[2Kpass`},
		"newline indented": {"first\nOK: all checks passed\n", "first\n  | OK: all checks passed"},
		"C1 CSI":           {"a\u009b2Kb", `a\u009b2Kb`},
		"bidi override":    {"ok \u202edeliaf", `ok \u202edeliaf`},
		"line separator":   {"a\u2028b", `a\u2028b`},
		"invalid utf-8":    {"a\xffb", `a\xffb`},
		"utf-8 kept":       {"température 45 °C …", "température 45 °C …"},
		"tab kept":         {"a\tb", "a\tb"},
		"nul and del":      {"a\x00b\x7f", `a\x00b\x7f`},
		"backspace":        {"FAIL\b\b\b\bPASS", `FAIL\b\b\b\bPASS`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := HostText(tc.in)
			if got != tc.want {
				t.Errorf("HostText(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if again := HostText(got); again != got {
				t.Errorf("HostText is not idempotent: %q -> %q", got, again)
			}
		})
	}
}

func TestHostErrorSanitisesCause(t *testing.T) {
	e := &HostError{Host: "gpu1", Op: "probe", Err: errString("probe exited 1: \x1b[2K\rOK")}
	if got, want := e.Error(), `gpu1: probe: probe exited 1: \x1b[2K\rOK`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestHostErrorIsOneLine(t *testing.T) {
	e := &HostError{Host: "gpu1", Op: "run", Err: errString("exit 1:\nOK: all checks passed\n")}
	if got, want := e.Error(), "gpu1: run: exit 1: OK: all checks passed"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
