package palette

import "testing"

func TestPaint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p    Palette
		role Role
		in   string
		want string
	}{
		{New(true), Fail, "FAIL", "\x1b[1;31mFAIL\x1b[0m"},
		{New(true), Pass, "pass", "\x1b[32mpass\x1b[0m"},
		{New(true), Dim, "skip", "\x1b[2mskip\x1b[0m"},
		{New(true), Fail, "", ""}, // nothing to colour: no stray escapes
		{New(false), Fail, "FAIL", "FAIL"},
		{Palette{}, Bold, "Plan:", "Plan:"},
	} {
		if got := tc.p.Paint(tc.role, tc.in); got != tc.want {
			t.Errorf("%+v.Paint(%q, %q) = %q, want %q", tc.p, tc.role, tc.in, got, tc.want)
		}
	}
	on := New(true)
	for name, got := range map[string][2]string{
		"Fail": {on.Fail("x"), on.Paint(Fail, "x")},
		"Pass": {on.Pass("x"), on.Paint(Pass, "x")},
		"Warn": {on.Warn("x"), on.Paint(Warn, "x")},
		"Dim":  {on.Dim("x"), on.Paint(Dim, "x")},
		"Bold": {on.Bold("x"), on.Paint(Bold, "x")},
	} {
		if got[0] != got[1] {
			t.Errorf("%s: %q, want %q", name, got[0], got[1])
		}
	}
}
