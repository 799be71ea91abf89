package compat

import "testing"

func TestLoad(t *testing.T) {
	kb, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if Default() == nil {
		t.Fatal("Default() = nil")
	}
	_ = kb
}
