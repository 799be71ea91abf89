package plan_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/plan"
	"github.com/gpuform/gpuform/provision/plan/plantest"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/spec"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// loadNode loads testdata/node.gpuform.hcl with its hosts replaced.
func loadNode(t testing.TB, hosts ...string) *spec.Config {
	t.Helper()
	src, err := os.ReadFile("testdata/node.gpuform.hcl")
	if err != nil {
		t.Fatal(err)
	}
	list := `["` + strings.Join(hosts, `", "`) + `"]`
	text := strings.Replace(string(src), `default = ["sim://hgx-h100-stale/1"]`, "default = "+list, 1)
	return plantest.LoadSpec(t, map[string]string{"node.gpuform.hcl": text})
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", name, diff)
	}
}

// fingerprints are sha256 of facts that include the temporary root path.
var fingerprintRE = regexp.MustCompile(`"facts_fingerprint": "[0-9a-f]{64}"`)

func TestPlanGolden(t *testing.T) {
	f := plantest.Start(t)
	hosts := []string{"sim://hgx-h100-stale/1", "sim://hgx-h100-converged/1", "sim://hgx-h100-stale/2"}
	cfg := loadNode(t, hosts...)
	p, err := f.Plan(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.Errored {
		for _, h := range p.Hosts {
			t.Logf("%s: %s", h.Host, h.Error)
		}
		t.Fatal("plan errored")
	}
	// One probe per host (docs/design.md, "Facts: one round trip per host").
	if got := f.Execs(); got != int64(len(hosts)) {
		t.Errorf("remote commands = %d, want one per host (%d)", got, len(hosts))
	}
	var text bytes.Buffer
	if err := plan.RenderText(&text, p, plan.RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "plan.golden.txt", text.Bytes())
	var js bytes.Buffer
	if err := plan.RenderJSON(&js, p); err != nil {
		t.Fatal(err)
	}
	golden(t, "plan.golden.json", fingerprintRE.ReplaceAll(js.Bytes(), []byte(`"facts_fingerprint": "FINGERPRINT"`)))

	// The two drifted hosts read as one group; the converged one has its own.
	// Groups are in order of their first host, hosts in plan order.
	var grouped [][]string
	for _, g := range p.Groups() {
		var names []string
		for _, h := range g.Hosts {
			names = append(names, h.Host)
		}
		grouped = append(grouped, names)
	}
	wantGroups := [][]string{{"sim://hgx-h100-stale/1", "sim://hgx-h100-stale/2"}, {"sim://hgx-h100-converged/1"}}
	if diff := cmp.Diff(wantGroups, grouped); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	// The converged profile is what gpuform leaves behind, its own files
	// included: nothing to change.
	var changed []string
	for _, rc := range p.Host("sim://hgx-h100-converged/1").ResourceChanges {
		if rc.Action != resource.NoOp {
			changed = append(changed, rc.Resource)
		}
	}
	if diff := cmp.Diff([]string(nil), changed); diff != "" {
		t.Errorf("changes on the converged host (-want +got):\n%s", diff)
	}
	if !p.Applyable || !p.HasChanges() {
		t.Errorf("plan not applyable")
	}
}

func TestRenderColor(t *testing.T) {
	f := plantest.Start(t)
	cfg := loadNode(t, "sim://hgx-h100-stale/1")
	p, err := f.Plan(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var plain, color bytes.Buffer
	plan.RenderText(&plain, p, plan.RenderOptions{})
	plan.RenderText(&color, p, plan.RenderOptions{Color: true})
	if strings.Contains(plain.String(), "\x1b[") {
		t.Error("colour escape in plain output")
	}
	if !strings.Contains(color.String(), "\x1b[32m  +\x1b[0m") {
		t.Error("no green + in coloured output")
	}
	if got := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(color.String(), ""); got != plain.String() {
		t.Error("coloured output differs from plain output beyond the escapes")
	}
}

func TestFoldHosts(t *testing.T) {
	tests := map[string]struct {
		in   []string
		want string
	}{
		"single":   {[]string{"gpu001"}, "gpu001"},
		"range":    {[]string{"gpu001", "gpu002", "gpu003", "gpu007"}, "gpu[001-003,007]"},
		"suffix":   {[]string{"gpu01.dc1", "gpu02.dc1"}, "gpu[01-02].dc1"},
		"unpadded": {[]string{"n9", "n10", "n11"}, "n[9-11]"},
		// Different prefixes never merge.
		"mixed": {[]string{"a1", "b1", "a2"}, "a[1-2], b1"},
		// A name with no number stays as written.
		"plain": {[]string{"login", "gpu1", "gpu2"}, "gpu[1-2], login"},
		// Padded and unpadded numbers are different hosts.
		"widths": {[]string{"gpu01", "gpu1"}, "gpu01, gpu1"},
		"sim":    {[]string{"sim://hgx-h100-stale/1", "sim://hgx-h100-stale/2"}, "sim://hgx-h100-stale/[1-2]"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := plan.FoldHosts(tc.in); got != tc.want {
				t.Errorf("FoldHosts(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestPlanFileRoundTripAndStale(t *testing.T) {
	f := plantest.Start(t)
	host := "sim://hgx-h100-stale/1"
	cfg := loadNode(t, host)
	ctx := context.Background()
	p, err := f.Plan(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	file, err := plan.NewFile(p, "testdata", nil, nil, p2time())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tfplan")
	if err := plan.WriteFile(path, file); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("plan file mode = %v, %v; want 0600 (it may hold variable values)", fi.Mode().Perm(), err)
	}
	saved, err := plan.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The file reads back to the same plan: typed values stay typed,
	// hidden values stay hidden.
	var want, got bytes.Buffer
	if err := plan.RenderJSON(&want, p); err != nil {
		t.Fatal(err)
	}
	if err := plan.RenderJSON(&got, saved.Plan); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want.String(), got.String()); diff != "" {
		t.Errorf("plan read back from its file differs (-want +got):\n%s", diff)
	}
	if _, err := plan.ParseFile([]byte(`{"kind":"gpuform-plan","format_version":"1.1","plan":{}}`)); err == nil || !strings.Contains(err.Error(), "make the plan again") {
		t.Errorf("a 1.x plan file (string attribute values) = %v, want refused", err)
	}
	fresh, _ := f.Plan(ctx, cfg)
	if err := plan.CheckSaved(saved.Plan, fresh); err != nil {
		t.Fatalf("unchanged host: %v", err)
	}
	// Someone changes the host between plan and apply.
	f.WriteFile(host, "/proc/sys/vm/swappiness", "10\n")
	fresh, _ = f.Plan(ctx, cfg)
	err = plan.CheckSaved(saved.Plan, fresh)
	if err == nil || !strings.Contains(err.Error(), host+": the host changed since the plan was made") {
		t.Fatalf("CheckSaved after a change = %v, want a stale error naming the host", err)
	}
	if _, err := plan.ParseFile([]byte(`{"format_version":"1.0","hosts":[]}`)); !errors.Is(err, plan.ErrNotPlanFile) {
		t.Errorf("plain plan JSON read as a plan file: %v", err)
	}
	if _, err := plan.ParseFile([]byte(`{"kind":"gpuform-plan","format_version":"3.0","plan":{}}`)); err == nil {
		t.Error("future major format accepted")
	}
}
