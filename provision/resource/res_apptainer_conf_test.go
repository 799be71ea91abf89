package resource

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// apptainerGPU sets every directive gpuform manages.
const apptainerGPU = "container {\n runtime = \"apptainer\"\n nvidia_container_toolkit = \"1.17.8\"\n apptainer_use_nvidia_container_cli = true\n apptainer_allow_setuid = false\n apptainer_always_use_nv = true\n apptainer_mount_dev = \"minimal\"\n}"

// apptainerCases are the apptainer.conf edits checked against golden files
// in testdata/apptainer (see SOURCE there for where each input comes from).
var apptainerCases = []struct {
	name, input, body string
	// changed are the directives whose line the edit must change.
	changed []string
}{
	// The installed default: four values change, nothing else.
	{"gpu-default", "apptainer-default.conf", apptainerGPU, []string{"allow setuid", "mount dev", "always use nv", "use nvidia-container-cli"}},
	// A site's hand edits: the value alone changes where it differs, the
	// line's own spacing stays, lines already right stay.
	{"gpu-site", "site-edited.conf", apptainerGPU, []string{"use nvidia-container-cli"}},
	// What the site file already says: not one byte changes.
	{"configured", "site-edited.conf", "container {\n runtime = \"apptainer\"\n apptainer_allow_setuid = false\n apptainer_always_use_nv = true\n apptainer_mount_dev = \"minimal\"\n}", nil},
	// Only one directive: the others keep whatever the file says.
	{"nv-only", "apptainer-default.conf", "container {\n runtime = \"apptainer\"\n apptainer_always_use_nv = true\n}", []string{"always use nv"}},
	// No file (Apptainer not installed yet): the directives alone.
	{"absent", "", apptainerGPU, nil},
}

func apptainerFacts(t *testing.T, input string) *facts.Node {
	t.Helper()
	f := debianNode()
	f.ConfigFiles = map[string]facts.ConfigFile{ApptainerConfFile: {}}
	if input != "" {
		b, err := os.ReadFile(filepath.Join("testdata", "apptainer", input))
		if err != nil {
			t.Fatal(err)
		}
		f.ConfigFiles[ApptainerConfFile] = configFile(b)
	}
	return f
}

func apptainerResource(t *testing.T, n *spec.Node, f *facts.Node) (*fileResource, []string) {
	t.Helper()
	rs, warnings, err := buildApptainerConf(newBuildInput(testKB, n, f))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 {
		t.Fatalf("built %d resources, want 1", len(rs))
	}
	return rs[0].(*fileResource), warnings
}

// TestApptainerConfGolden edits the installed apptainer.conf and a site's
// edited one: the result is the golden file, only the spec's directives'
// values differ from the input (every other byte kept, in order), the
// values read back as Apptainer reads them are the spec's, and a second
// plan over the result changes nothing.
func TestApptainerConfGolden(t *testing.T) {
	for _, tc := range apptainerCases {
		t.Run(tc.name, func(t *testing.T) {
			n := loadNode(t, tc.body)
			f := apptainerFacts(t, tc.input)
			r, warnings := apptainerResource(t, n, f)
			if (tc.input == "") != (len(warnings) == 1) {
				t.Errorf("warnings: %q", warnings)
			}
			cf := f.ConfigFiles[ApptainerConfFile]
			got, err := r.edit(cf.Data, cf.Exists)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "apptainer", tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("edit of %s differs from %s (go test -update rewrites it):\n%s", tc.input, golden, got)
			}
			if tc.input != "" {
				in, out := strings.SplitAfter(string(cf.Data), "\n"), strings.SplitAfter(got, "\n")
				if len(in) != len(out) {
					t.Fatalf("the edit changed the number of lines: %d -> %d", len(in), len(out))
				}
				var changed []string
				for i := range in {
					if in[i] == out[i] {
						continue
					}
					name, _, _ := strings.Cut(out[i], "=")
					changed = append(changed, strings.TrimSpace(name))
					// Only the value: what precedes it is the input's.
					if k, _, _ := strings.Cut(in[i], "="); !strings.HasPrefix(out[i], k+"=") {
						t.Errorf("line %d: %q became %q", i+1, in[i], out[i])
					}
				}
				if strings.Join(changed, ",") != strings.Join(tc.changed, ",") {
					t.Errorf("changed lines %q, want %q", changed, tc.changed)
				}
			}
			vals := apptainerValues(got)
			for k, v := range r.desired {
				if StringVal(vals[k]) != v {
					t.Errorf("%s reads %q after the edit, want %q", k, vals[k], v.Text)
				}
			}
			first, err := r.Diff(f)
			if err != nil {
				t.Fatal(err)
			}
			if unchanged := tc.name == "configured"; (first.Action == NoOp) != unchanged || !unchanged && len(first.Steps) != 1 {
				t.Errorf("first plan: %c, %d steps", first.Action, len(first.Steps))
			}
			f.ConfigFiles[ApptainerConfFile] = configFile([]byte(got))
			r, _ = apptainerResource(t, n, f)
			if c, err := r.Diff(f); err != nil || c.Action != NoOp {
				t.Errorf("second plan: %v %c %v -> %v", err, c.Action, c.Before, c.After)
			}
		})
	}
}

// TestApptainerConfOwnership: a spec that owns the node names itself and
// its directives in a header; once it declares none, the header goes and
// the values stay (the convention of daemon.json's and config.toml's keys);
// a directive set twice is refused rather than guessed; another runtime
// plans nothing.
func TestApptainerConfOwnership(t *testing.T) {
	n := loadNode(t, "container {\n runtime = \"apptainer\"\n apptainer_use_nvidia_container_cli = true\n}")
	n.Owner = spec.Owner{Spec: "cluster"}
	f := apptainerFacts(t, "apptainer-default.conf")
	r, _ := apptainerResource(t, n, f)
	got, err := r.edit(f.ConfigFiles[ApptainerConfFile].Data, true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, `# Managed by gpuform, spec "cluster" (the directives use nvidia-container-cli; other lines are left as they are).`) || apptainerValues(got)["use nvidia-container-cli"] != "yes" {
		t.Fatalf("owned edit:\n%s", got[:400])
	}
	f.ConfigFiles[ApptainerConfFile] = configFile([]byte(got))

	// The spec stops declaring it.
	off := loadNode(t, "container {\n runtime = \"apptainer\"\n}")
	off.Owner = n.Owner
	r, _ = apptainerResource(t, off, f)
	c, err := r.Diff(f)
	if err != nil || c.Action != Update || len(c.Steps) != 1 {
		t.Fatalf("plan without directives: %v %c %d steps", err, c.Action, len(c.Steps))
	}
	back, err := r.edit([]byte(got), true)
	if err != nil {
		t.Fatal(err)
	}
	def, _ := os.ReadFile(filepath.Join("testdata", "apptainer", "apptainer-default.conf"))
	if want := strings.Replace(string(def), "use nvidia-container-cli = no", "use nvidia-container-cli = yes", 1); back != want {
		t.Errorf("without directives the file is not the input with the value kept:\n%s", back[:400])
	}
	f.ConfigFiles[ApptainerConfFile] = configFile([]byte(back))
	if rs, _, _ := buildApptainerConf(newBuildInput(testKB, off, f)); len(rs) != 0 {
		t.Errorf("a file without gpuform's header and a spec without directives: %d resources", len(rs))
	}
	if rs, _, _ := buildApptainerConf(newBuildInput(testKB, loadNode(t, "container {\n runtime = \"docker\"\n}"), f)); len(rs) != 0 {
		t.Errorf("docker runtime: %d resources", len(rs))
	}

	dup := append([]byte("always use nv = yes\n"), def...)
	f.ConfigFiles[ApptainerConfFile] = configFile(dup)
	nv := loadNode(t, "container {\n runtime = \"apptainer\"\n apptainer_always_use_nv = false\n}")
	r, _ = apptainerResource(t, nv, f)
	if _, err := r.Diff(f); err == nil || !strings.Contains(err.Error(), `"always use nv" is set twice (lines 1 and 355)`) {
		t.Errorf("a directive set twice: %v", err)
	}
}

// FuzzSetApptainerDirectives edits arbitrary files (an apptainer.conf is
// the node's, not gpuform's): no panic, and where the edit succeeds every
// directive reads back as set, and every line but the directives' own is
// kept, in order.
func FuzzSetApptainerDirectives(f *testing.F) {
	for _, name := range []string{"apptainer-default.conf", "site-edited.conf"} {
		b, err := os.ReadFile(filepath.Join("testdata", "apptainer", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("always use nv=\nmount dev = yes\r\n  allow setuid\t=\tyes # no\nuse nvidia-container-cli = no"))
	dirs := []apptainerDirective{{"allow setuid", "no"}, {"mount dev", "minimal"}, {"always use nv", "yes"}, {"use nvidia-container-cli", "yes"}}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := setApptainerDirectives(in, dirs)
		if err != nil {
			return
		}
		vals := apptainerValues(out)
		for _, d := range dirs {
			if vals[d.name] != d.value {
				t.Fatalf("%s reads %q after the edit", d.name, vals[d.name])
			}
		}
		a, b := strings.SplitAfter(string(in), "\n"), strings.SplitAfter(out, "\n")
		if a[len(a)-1] == "" {
			// in ends with a newline: no line follows it.
			a = a[:len(a)-1]
		}
		for i := 0; i < len(a) && i < len(b); i++ {
			// The last line gains the newline a directive appended after
			// it needs.
			if a[i] == b[i] || i == len(a)-1 && a[i]+"\n" == b[i] {
				continue
			}
			if m := apptainerLine.FindStringSubmatch(strings.TrimRight(b[i], "\n")); m == nil || apptainerValues(a[i])[strings.TrimSpace(m[1])] == "" {
				t.Fatalf("line %d %q became %q", i+1, a[i], b[i])
			}
		}
		if len(b) < len(a) {
			t.Fatalf("%d lines became %d", len(a), len(b))
		}
	})
}

// TestApptainerConfWaitsForPackage: where this apply installs Apptainer,
// apptainer.conf is the package's to create; gpuform does not write a
// directives-only file first (dpkg and rpm would keep it over the
// package's own), and sets the directives once the file is there.
func TestApptainerConfWaitsForPackage(t *testing.T) {
	n := loadNode(t, "container {\n runtime = \"apptainer\"\n apptainer_version = \"1.4.5\"\n apptainer_always_use_nv = true\n}")
	for _, tc := range []struct {
		name          string
		file          string
		installed     bool
		wantResources int
		wantWarning   string
	}{
		{"package to install, no file", "", false, 0, "set by the next apply"},
		{"package installed, no file", "", true, 1, "is not on the node"},
		{"package to install, file there", "apptainer-default.conf", false, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := apptainerFacts(t, tc.file)
			if tc.installed {
				f.Packages.Installed["apptainer"] = facts.Package{Version: "1.4.5"}
			}
			rs, warnings, err := buildApptainerConf(newBuildInput(testKB, n, f))
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != tc.wantResources {
				t.Errorf("%d resources, want %d", len(rs), tc.wantResources)
			}
			got := strings.Join(warnings, "\n")
			if tc.wantWarning == "" && got != "" || !strings.Contains(got, tc.wantWarning) {
				t.Errorf("warnings %q, want one containing %q", got, tc.wantWarning)
			}
		})
	}
}
