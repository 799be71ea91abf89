package connect

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/spec"
)

func TestSimStateDir(t *testing.T) {
	env := func(kv map[string]string) func(string) string {
		return func(k string) string { return kv[k] }
	}
	tests := map[string]struct {
		spec string
		env  map[string]string
		want string // a glob; "" = no state directory
	}{
		"explicit":      {"/specs/a", map[string]string{"GPUFORM_SIM_STATE": "/s", "HOME": "/h"}, "/s"},
		"xdg":           {"/specs/a", map[string]string{"XDG_STATE_HOME": "/x", "HOME": "/h"}, "/x/gpuform/sim/a-????????????"},
		"home":          {"/specs/quickstart", map[string]string{"HOME": "/h"}, "/h/.local/state/gpuform/sim/quickstart-????????????"},
		"relative xdg":  {"/specs/a", map[string]string{"XDG_STATE_HOME": "rel", "HOME": "/h"}, "/h/.local/state/gpuform/sim/a-????????????"},
		"odd name":      {"/specs/my spec!", map[string]string{"HOME": "/h"}, "/h/.local/state/gpuform/sim/my-spec-????????????"},
		"no home":       {"/specs/a", map[string]string{}, ""},
		"relative home": {"/specs/a", map[string]string{"HOME": "h"}, ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := SimStateDir(tc.spec, env(tc.env))
			if tc.want == "" {
				if got != "" {
					t.Errorf("SimStateDir = %q, want none", got)
				}
				return
			}
			if ok, _ := filepath.Match(tc.want, got); !ok {
				t.Errorf("SimStateDir = %q, want %s", got, tc.want)
			}
		})
	}
	// Two specs with the same name in different places never share nodes.
	h := env(map[string]string{"HOME": "/h"})
	if a, b := SimStateDir("/one/quickstart", h), SimStateDir("/two/quickstart", h); a == b {
		t.Errorf("two specs share %s", a)
	}
}

func TestOpenRefuses(t *testing.T) {
	specDir := t.TempDir()
	tests := map[string]struct {
		host string
		o    Options
		want string
	}{
		"local without allow": {"local://me", Options{}, "pass -allow-local"},
		"state inside spec":   {"sim://gh200", Options{SimStateDir: filepath.Join(specDir, ".gpuform", "sim"), SpecDir: specDir}, "inside the spec directory"},
		"spec itself":         {"sim://gh200", Options{SimStateDir: specDir, SpecDir: specDir}, "inside the spec directory"},
		"no state":            {"sim://gh200", Options{}, "no state directory"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tr, err := Open(context.Background(), spec.Host{Name: tc.host}, tc.o)
			if err == nil {
				tr.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open(%s) = %v, want an error containing %q", tc.host, err, tc.want)
			}
		})
	}
	if tr, err := Open(context.Background(), spec.Host{Name: "local://me"}, Options{AllowLocal: true}); err != nil {
		t.Errorf("local with AllowLocal: %v", err)
	} else {
		tr.Close()
	}
}
