package resource

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
)

// TestDockerCDIFeature: with cdi = true on a Docker node, daemon.json gets
// "features": {"cdi": true} where the node's Docker needs it (25.0 to
// 28.1), or where its release is unknown (with a warning saying why); from
// 28.2 CDI is on by default and only an explicit false is turned back;
// before 25.0 there is no CDI and a warning says so. Other features keys
// are kept. Before, cdi = true left daemon.json alone and
// docker run --device nvidia.com/gpu=all failed on Docker 25 to 28.1.
func TestDockerCDIFeature(t *testing.T) {
	const body = "container {\n runtime = \"docker\"\n nvidia_container_toolkit = \"1.17.8\"\n cdi = true\n}"
	converged := `{"runtimes": {"nvidia": {"path": "nvidia-container-runtime", "args": []}}`
	for _, tc := range []struct {
		name, pkg, version, daemon string
		// want is features.cdi after the plan ("" for no key); action the
		// docker_daemon change.
		want    string
		action  Action
		warning string
	}{
		{name: "docker 27 needs it", pkg: "docker-ce", version: "5:27.5.1-1~ubuntu.22.04~jammy", daemon: converged + `}`, want: "true", action: Update},
		{name: "other features kept", pkg: "docker-ce", version: "5:28.1.1-1~debian.12~bookworm", daemon: converged + `, "features": {"containerd-snapshotter": true}}`, want: "true", action: Update},
		{name: "already set", pkg: "docker.io", version: "26.1.5+dfsg1-9+b9", daemon: converged + `, "features": {"cdi": true}}`, want: "true", action: NoOp},
		{name: "28.2 has it on", pkg: "docker-ce", version: "5:28.2.2-1~ubuntu.24.04~noble", daemon: converged + `}`, action: NoOp},
		{name: "28.2 turned off", pkg: "moby-engine", version: "28.3.3-1.fc42", daemon: converged + `, "features": {"cdi": false}}`, want: "true", action: Update},
		{name: "too old", pkg: "docker.io", version: "20.10.24+dfsg1-1+deb12u1", daemon: converged + `}`, action: NoOp, warning: "has no CDI support"},
		{name: "unknown release", daemon: converged + `}`, want: "true", action: Update, warning: "release is not known"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := debianNode()
			if tc.pkg != "" {
				f.Packages.Installed[tc.pkg] = facts.Package{Version: tc.version}
			}
			var d map[string]any
			dec := json.NewDecoder(strings.NewReader(tc.daemon))
			dec.UseNumber()
			if err := dec.Decode(&d); err != nil {
				t.Fatal(err)
			}
			f.Docker = facts.Docker{Present: true, Daemon: d, Raw: tc.daemon}
			n := loadNode(t, body)
			rs, warnings, err := Build(testKB, n, f)
			if err != nil {
				t.Fatal(err)
			}
			var r *dockerResource
			for _, x := range rs {
				if dr, ok := x.(*dockerResource); ok {
					r = dr
				}
			}
			if r == nil {
				t.Fatal("no docker_daemon resource")
			}
			c, err := r.Diff(f)
			if err != nil {
				t.Fatal(err)
			}
			if c.Action != tc.action || c.After["features.cdi"] != StringVal(tc.want) {
				t.Errorf("plan %c %v -> %v, want %c with features.cdi %q", c.Action, c.Before, c.After, tc.action, tc.want)
			}
			joined := strings.Join(warnings, "\n")
			if tc.warning != "" && !strings.Contains(joined, tc.warning) || tc.warning == "" && strings.Contains(joined, "cdi") {
				t.Errorf("warnings %q, want %q", warnings, tc.warning)
			}
			if c.Action != Update {
				return
			}
			out, err := r.merge(d, true, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Features map[string]any `json:"features"`
				Runtimes map[string]any `json:"runtimes"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatal(err)
			}
			if got.Features["cdi"] != true || got.Runtimes["nvidia"] == nil {
				t.Errorf("daemon.json written: %s", out)
			}
			if strings.Contains(tc.daemon, "containerd-snapshotter") && got.Features["containerd-snapshotter"] != true {
				t.Errorf("another features key was lost: %s", out)
			}
			// Applied: the next plan has nothing to do.
			var after map[string]any
			dec = json.NewDecoder(strings.NewReader(out))
			dec.UseNumber()
			if err := dec.Decode(&after); err != nil {
				t.Fatal(err)
			}
			f.Docker = facts.Docker{Present: true, Daemon: after, Raw: out}
			if c, err := r.Diff(f); err != nil || c.Action != NoOp {
				t.Errorf("plan after apply: %c %v -> %v (%v)", c.Action, c.Before, c.After, err)
			}
		})
	}
}
