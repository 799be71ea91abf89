package plan

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/spec"
)

// An attribute is written as a JSON boolean or number only when the
// resource says it is one and its text reads as one; a hidden value is
// always the redaction string, so its kind leaks nothing. Each value reads
// back to the same JSON.
func TestValueJSON(t *testing.T) {
	for name, tc := range map[string]struct {
		v    Value
		want string
	}{
		"bool":             {Value{Value: resource.BoolVal(false)}, `false`},
		"number":           {Value{Value: resource.NumberVal(512)}, `512`},
		"text":             {Value{Value: resource.StringVal("512")}, `"512"`},
		"bool not a bool":  {Value{Value: resource.Value{Kind: resource.Bool, Text: "yes"}}, `"yes"`},
		"number padded":    {Value{Value: resource.Value{Kind: resource.Number, Text: "007"}}, `"007"`},
		"number empty":     {Value{Value: resource.Value{Kind: resource.Number}}, `""`},
		"sensitive bool":   {Value{Value: resource.Value{Kind: resource.Bool, Text: spec.Redacted}, Sensitive: true}, `"(sensitive value)"`},
		"quotes and angle": {Value{Value: resource.StringVal(`a"<b>&`)}, `"a\"<b>&"`},
	} {
		t.Run(name, func(t *testing.T) {
			got := string(valueJSON(tc.v))
			if got != tc.want {
				t.Fatalf("valueJSON(%+v) = %s, want %s", tc.v, got, tc.want)
			}
			back, err := attrsModel(map[string]json.RawMessage{"k": json.RawMessage(got)}, map[string]bool{"k": tc.v.Sensitive})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(got, string(valueJSON(back["k"]))); diff != "" {
				t.Errorf("read back (-want +got):\n%s", diff)
			}
		})
	}
}

// A plan file written by an earlier gpuform (format 2.3, when the plan
// layer looked attribute kinds up by name) reads back with each value's
// kind from its JSON type, and writes back byte for byte.
func TestPlanFileOfEarlierGpuform(t *testing.T) {
	old, err := os.ReadFile("testdata/tfplan-2.3.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ParseFile(old)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]resource.Kind{}
	for _, rc := range f.Plan.Host("sim://hgx-h100-stale/1").ResourceChanges {
		for _, k := range []string{"held", "set_at_boot", "version", "loaded"} {
			if v, ok := rc.After[k]; ok {
				kinds[rc.Resource+"."+k] = v.Kind
			}
		}
	}
	want := map[string]resource.Kind{
		"driver_package.held": resource.Bool, "driver_package.version": resource.String,
		"cpu_governor.set_at_boot": resource.Bool, "nvidia_peermem.loaded": resource.Bool,
	}
	for k, w := range want {
		if kinds[k] != w {
			t.Errorf("%s read back as kind %d, want %d", k, kinds[k], w)
		}
	}
	path := filepath.Join(t.TempDir(), "tfplan")
	if err := WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	back, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(asWrittenNow(t, old)), string(back)); diff != "" {
		t.Errorf("plan file written back differs (-old +new):\n%s", diff)
	}
}

// A node's rollout timeouts are written into a plan file as the spec wrote
// them and parsed once when the file is read; one that is no timeout is an
// error naming it, not a default quietly put in its place.
func TestPlanFileRolloutTimeouts(t *testing.T) {
	old, err := os.ReadFile("testdata/tfplan-2.3.json")
	if err != nil {
		t.Fatal(err)
	}
	const at = `"reboot": "never"`
	if !bytes.Contains(old, []byte(at)) {
		t.Fatalf("testdata/tfplan-2.3.json has no %s", at)
	}
	with := func(step string) []byte {
		return bytes.Replace(old, []byte(at), []byte(at+`,
        "drain": "slurm",
        "step_timeout": "`+step+`",
        "drain_timeout": "2h",
        "drain_poll": "30s"`), 1)
	}
	src := with("45m")
	f, err := ParseFile(src)
	if err != nil {
		t.Fatal(err)
	}
	n := f.Plan.Nodes[0]
	got := []spec.Duration{n.StepTimeout, n.DrainTimeout, n.DrainPoll}
	want := []spec.Duration{{Text: "45m", D: 45 * time.Minute}, {Text: "2h", D: 2 * time.Hour}, {Text: "30s", D: 30 * time.Second}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rollout timeouts (-want +got):\n%s", diff)
	}
	path := filepath.Join(t.TempDir(), "tfplan")
	if err := WriteFile(path, f); err != nil {
		t.Fatal(err)
	}
	if back, err := os.ReadFile(path); err != nil || !bytes.Equal(back, asWrittenNow(t, src)) {
		t.Errorf("plan file written back differs (%v):\n%s", err, cmp.Diff(string(asWrittenNow(t, src)), string(back)))
	}
	for _, bad := range []string{"soon", "0s", "25h"} {
		_, err := ParseFile(with(bad))
		wantErr := `plan file: node train: step_timeout: "` + bad + `" is not a duration between 1s and 24h; make the plan again`
		if err == nil || err.Error() != wantErr {
			t.Errorf("step_timeout %q: %v, want %s", bad, err, wantErr)
		}
	}
}

// asWrittenNow is a 2.3 plan file as this gpuform writes it back: the
// file keeps the format_version it was written with (its own, first), and
// the plan inside it is the document this gpuform renders, format 2.4
// (which only added fields, none of which a 2.3 plan holds).
func asWrittenNow(t *testing.T, file []byte) []byte {
	t.Helper()
	const was, now = `"format_version": "2.3"`, `"format_version": "2.4"`
	if bytes.Count(file, []byte(was)) != 2 {
		t.Fatalf("a 2.3 plan file has %s twice (the file's and its plan's), this one %d times", was, bytes.Count(file, []byte(was)))
	}
	i := bytes.Index(file, []byte(was)) + len(was)
	return append(append([]byte{}, file[:i]...), bytes.Replace(file[i:], []byte(was), []byte(now), 1)...)
}
