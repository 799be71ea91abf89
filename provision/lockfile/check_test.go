package lockfile

import (
	"testing"

	"github.com/gpuform/gpuform/spec"
)

// TestFromLock checks lock -check's judgement: floating versions take the
// lock file's pin of their branch, exact ones the spec's, the fabric
// manager record stands with its driver pin, and a missing or foreign pin
// is an error at the spec's attribute.
func TestFromLock(t *testing.T) {
	load := func(t *testing.T, driver string) *spec.Config {
		t.Helper()
		src := "node \"n\" {\n  hosts = [\"h1\"]\n  driver {\n    version        = \"" + driver + "\"\n    fabric_manager = true\n  }\n  cuda {\n    version = \"12.8.1\"\n  }\n}\n"
		cfg, diags := spec.LoadFiles(map[string][]byte{"main.gpuform.hcl": []byte(src)}, spec.LoadOptions{})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		return cfg
	}
	pin := func(s string) spec.Attr[spec.Version] {
		v, err := spec.ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		return spec.Attr[spec.Version]{V: v, Set: true}
	}
	prev := &spec.Lock{Nodes: map[string]map[spec.Component]spec.Attr[spec.Version]{"n": {
		spec.ComponentDriver:        pin("580.95.05"),
		spec.ComponentFabricManager: pin("580.82.07"),
		spec.ComponentCUDA:          pin("12.8.0"),
	}}}

	lock, diags := FromLock(load(t, "580"), prev)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for comp, want := range map[spec.Component]string{spec.ComponentDriver: "580.95.05", spec.ComponentFabricManager: "580.82.07", spec.ComponentCUDA: "12.8.1"} {
		if got, _ := lock.Pinned("n", comp); got.Raw != want {
			t.Errorf("%s = %q, want %q", comp, got.Raw, want)
		}
	}

	// The spec pins another driver exactly: the fabric manager follows it.
	lock, _ = FromLock(load(t, "580.105.08"), prev)
	if got, _ := lock.Pinned("n", spec.ComponentFabricManager); got.Raw != "580.105.08" {
		t.Errorf("fabric manager with a new exact driver = %q, want 580.105.08", got.Raw)
	}

	for name, c := range map[string]struct {
		driver string
		prev   *spec.Lock
		want   string
	}{
		"other branch": {"590", prev, "Lock file is out of date"},
		"no lock file": {"580", nil, "Floating version not locked"},
	} {
		_, diags := FromLock(load(t, c.driver), c.prev)
		if len(diags) != 1 || diags[0].Summary != c.want || diags[0].Subject == nil || diags[0].Subject.Start.Line != 4 {
			t.Errorf("%s: got %v, want %q at line 4", name, diags, c.want)
		}
	}
}
