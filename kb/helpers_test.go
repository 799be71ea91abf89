package kb

import "testing"

func ver(t *testing.T, s string) Version {
	t.Helper()
	v, err := ParseVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func drv(t *testing.T, s string) Version {
	t.Helper()
	v, err := ParseDriverVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func mustKB(t testing.TB) *KB {
	t.Helper()
	kb, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return kb
}
