package resource

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/internal/tomledit"
	"github.com/gpuform/gpuform/provision/facts"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// containerdCases are the config.toml edits checked against golden files in
// testdata/containerd (see SOURCE there for where each input comes from).
var containerdCases = []struct {
	name, input, body string
	// version is the config version the golden file must keep.
	version string
}{
	// containerd 1.6's own default: deeply indented, every key spelled out.
	{"default-1.6", "containerd-1.6-default.toml", "container {\n runtime = \"containerd\"\n nvidia_container_toolkit = \"1.17.3\"\n default_runtime = true\n}", "2"},
	// The operator's comments, dotted keys, a kata runtime and
	// SystemdCgroup = true, which the nvidia runtime must copy.
	{"user-plugins", "user-plugins.toml", "container {\n runtime = \"containerd\"\n nvidia_container_toolkit = \"1.17.3\"\n default_runtime = true\n}", "2"},
	// containerd 2.2's own default, config version 3: enable_cdi is
	// already true there, so only the runtime is added.
	{"default-2.2", "containerd-2.2-default.toml", "container {\n runtime = \"containerd\"\n nvidia_container_toolkit = \"1.17.3\"\n default_runtime = true\n}", "3"},
	// Config version 3 (containerd 2.x): the CRI runtime plugin's new name.
	{"v3-user", "v3-user.toml", "container {\n runtime = \"containerd\"\n nvidia_container_toolkit = \"1.17.3\"\n}", "3"},
	// A toolkit older than CDI generation: enable_cdi is left alone.
	{"old-toolkit", "user-plugins.toml", "container {\n runtime = \"containerd\"\n nvidia_container_toolkit = \"1.11.0\"\n}", "2"},
	// Already configured the way nvidia-ctk writes it: not one byte changes.
	{"configured", "configured.toml", "container {\n runtime = \"containerd\"\n nvidia_container_toolkit = \"1.17.3\"\n default_runtime = true\n}", "2"},
	// default_runtime = false alone takes nvidia off as the default and
	// registers nothing.
	{"default-off", "configured.toml", "container {\n runtime = \"containerd\"\n default_runtime = false\n}", "2"},
	// runc's options as an inline table: the nvidia runtime inherits
	// them all but BinaryName (issue 31).
	{"inline-runc-options", "inline-runc-options.toml", "container {\n runtime = \"containerd\"\n nvidia_container_toolkit = \"1.17.3\"\n default_runtime = true\n}", "2"},
	// The spec overrides one inherited option and adds another.
	{"inline-runc-options-override", "inline-runc-options.toml", "container {\n runtime = \"containerd\"\n nvidia_container_toolkit = \"1.17.3\"\n default_runtime = true\n containerd_runtime_options = { SystemdCgroup = false, NoPivotRoot = true }\n}", "2"},
	// No file: a minimal version 2 file, as nvidia-ctk writes.
	{"absent", "", "container {\n runtime = \"containerd\"\n nvidia_container_toolkit = \"1.17.3\"\n}", "2"},
}

func containerdFacts(t *testing.T, input string) *facts.Node {
	t.Helper()
	f := debianNode()
	f.ConfigFiles = map[string]facts.ConfigFile{ContainerdConfigFile: {}}
	if input != "" {
		b, err := os.ReadFile(filepath.Join("testdata", "containerd", input))
		if err != nil {
			t.Fatal(err)
		}
		f.ConfigFiles[ContainerdConfigFile] = configFile(b)
	}
	return f
}

// configFile is what the probe reports of a readable root-owned file.
func configFile(b []byte) facts.ConfigFile {
	sum := sha256.Sum256(b)
	return facts.ConfigFile{Exists: true, Data: b, SHA256: hex.EncodeToString(sum[:]), Size: len(b), Mode: "-rw-r--r--", UID: "0", GID: "0"}
}

// TestContainerdConfigGolden edits real and realistic config.toml files:
// the result is the golden file, every line the edit does not own is
// kept byte for byte and in order, and a second plan over the result
// changes nothing.
func TestContainerdConfigGolden(t *testing.T) {
	for _, tc := range containerdCases {
		t.Run(tc.name, func(t *testing.T) {
			n := loadNode(t, tc.body)
			f := containerdFacts(t, tc.input)
			r := containerdConfig(testKB, n, n.Container)
			cf := f.ConfigFiles[ContainerdConfigFile]
			got, err := r.edit(cf.Data, cf.Exists)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "containerd", tc.name+".golden")
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
			assertOnlyOwnedChanged(t, cf.Data, []byte(got))
			if tc.name == "configured" && got != string(cf.Data) {
				t.Errorf("a configured file was rewritten:\n%s", got)
			}
			d, err := tomledit.Parse([]byte(got))
			if err != nil {
				t.Fatal(err)
			}
			if v, _ := d.Lookup("version"); v.Text != tc.version {
				t.Errorf("version = %q, want %q", v.Text, tc.version)
			}
			// The plan over the input writes the file unless it already
			// says what the spec asks.
			first, err := r.Diff(f)
			if err != nil {
				t.Fatal(err)
			}
			if unchanged := tc.name == "configured"; (first.Action == NoOp) != unchanged || !unchanged && len(first.Steps) != 1 {
				t.Errorf("first plan: %c, %d steps", first.Action, len(first.Steps))
			}
			// Applied once, planned again: nothing to do.
			f.ConfigFiles[ContainerdConfigFile] = configFile([]byte(got))
			c, err := r.Diff(f)
			if err != nil {
				t.Fatal(err)
			}
			if c.Action != NoOp {
				t.Errorf("second plan: %c %v -> %v", c.Action, c.Before, c.After)
			}
		})
	}
}

// ownedLine is a line an edit may add or change: a key gpuform owns, the
// nvidia runtime's tables, gpuform's header, a blank line before a new table.
var ownedLine = regexp.MustCompile(`^\s*(` +
	`(runtime_type|BinaryName|SystemdCgroup|NoNewKeyring|NoPivotRoot|ShimCgroup|IoUid|IoGid|Root|CriuPath|CriuImagePath|CriuWorkPath|default_runtime_name|enable_cdi|version) = .*` +
	`|\[plugins\.["'][a-z0-9.]+["'](\.containerd\.runtimes\.nvidia(\.options)?)?\]` +
	`|# Managed by gpuform.*|# Applied from .*|)$`)

// assertOnlyOwnedChanged checks that out is in with owned lines added or
// their values changed, and nothing else: every other line of in is in out,
// in order, byte for byte.
func assertOnlyOwnedChanged(t *testing.T, in, out []byte) {
	t.Helper()
	key := func(l string) string { k, _, _ := strings.Cut(strings.TrimSpace(l), "="); return strings.TrimSpace(k) }
	a, b := strings.SplitAfter(string(in), "\n"), strings.SplitAfter(string(out), "\n")
	i := 0
	for _, l := range b {
		// An owned key's line removed (default_runtime = false).
		for i+1 < len(a) && l != a[i] && l == a[i+1] && ownedLine.MatchString(strings.TrimRight(a[i], "\n")) && strings.Contains(a[i], "=") {
			i++
		}
		switch {
		case i < len(a) && l == a[i]:
			i++
		case !ownedLine.MatchString(strings.TrimRight(l, "\n")):
			t.Errorf("edit added or changed a line gpuform does not own: %q", l)
		case i < len(a) && ownedLine.MatchString(strings.TrimRight(a[i], "\n")) && strings.Contains(a[i], "=") && key(a[i]) == key(l):
			// An owned key's value replaced in place.
			i++
		}
	}
	for ; i < len(a); i++ {
		if a[i] != "" {
			t.Errorf("edit dropped or moved a line: %q", a[i])
		}
	}
}

// TestContainerdReadsEditedConfig hands the edited files to the real
// containerd (Debian's package: scripts/test.sh installs it), whose
// `config dump` parses the file and prints the configuration it would run
// with: the nvidia runtime must be there, with gpuform's binary.
func TestContainerdReadsEditedConfig(t *testing.T) {
	bin, err := exec.LookPath("containerd")
	if err != nil {
		sshtest.Missing(t, "containerd is not installed (apt-get install containerd)")
	}
	ver, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	major2 := regexp.MustCompile(` v?2\.`).Match(ver)
	for _, tc := range containerdCases {
		if tc.version == "3" && !major2 {
			// containerd 1.x does not read config version 3.
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			golden := filepath.Join("testdata", "containerd", tc.name+".golden")
			var stderr bytes.Buffer
			cmd := exec.Command(bin, "--config", golden, "config", "dump")
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("containerd config dump: %v\n%s", err, stderr.String())
			}
			d, err := tomledit.Parse(out)
			if err != nil {
				t.Fatal(err)
			}
			v := tc.version
			if major2 {
				// containerd 2 dumps every config as version 3.
				v = "3"
			}
			cri, _ := criPlugin(v)
			base := []string{"plugins", cri, "containerd", "runtimes", "nvidia"}
			if v, _ := d.Lookup(append(base, "options", "BinaryName")...); v.Text != containerdNvidiaBinary {
				t.Errorf("containerd reads the nvidia runtime's BinaryName as %q:\n%s", v.Text, out)
			}
			if v, _ := d.Lookup(append(base, "runtime_type")...); v.Text != containerdRuntimeType {
				t.Errorf("containerd reads the nvidia runtime_type as %q", v.Text)
			}
			// The nvidia runtime starts as the default runtime would:
			// every option of runc's that containerd reads (but the
			// binary) is the nvidia runtime's too.
			runcDump := runtimeOptions(t, out, append(base[:len(base)-1:len(base)-1], "runc"))
			nvDump := runtimeOptions(t, out, base)
			for k, v := range runcDump {
				// The spec's containerd_runtime_options win.
				if strings.Contains(tc.body, " "+k+" = ") || strings.Contains(tc.body, "{ "+k+" = ") {
					continue
				}
				if k != "BinaryName" && nvDump[k] != v {
					t.Errorf("containerd reads the nvidia runtime's %s as %v, runc's as %v", k, nvDump[k], v)
				}
			}
			if strings.Contains(tc.body, "containerd_runtime_options") {
				if nvDump["SystemdCgroup"] != false || nvDump["NoPivotRoot"] != true {
					t.Errorf("containerd reads the spec's options for the nvidia runtime as %v", nvDump)
				}
			}
			wantDefault := "runc"
			if strings.Contains(tc.body, "default_runtime = true") {
				wantDefault = "nvidia"
			}
			if v, _ := d.Lookup("plugins", cri, "containerd", "default_runtime_name"); v.Text != wantDefault {
				t.Errorf("containerd's default runtime is %q, want %q", v.Text, wantDefault)
			}
		})
	}
}

// TestCDISpecByToolkitRelease: which file is kept and how follows the
// toolkit release, from the knowledge base's feature table.
func TestCDISpecByToolkitRelease(t *testing.T) {
	for _, tc := range []struct {
		name, toolkit string
		// want is the step's command; "" when no resource is built.
		want, warning string
		specs         map[string]facts.CDISpec
		action        Action
	}{
		// Before 1.18 nothing refreshes the spec: gpuform runs nvidia-ctk.
		{name: "generate", toolkit: "1.17.8", want: "cdi_generate.sh /etc/cdi/nvidia.yaml", action: Create},
		// 1.18 and later: the toolkit's own service writes /var/run/cdi.
		{name: "refresh", toolkit: "1.18.0", want: "systemd_unit.sh restart nvidia-cdi-refresh.service", action: Update,
			specs: map[string]facts.CDISpec{"/var/run/cdi/nvidia.yaml": {Kind: "nvidia.com/gpu", DriverVersions: []string{"535.183.06"}}}},
		{name: "current", toolkit: "1.18.0", action: NoOp,
			specs: map[string]facts.CDISpec{"/var/run/cdi/nvidia.yaml": {Kind: "nvidia.com/gpu", DriverVersions: []string{"550.127.08"}}}},
		{name: "too old", toolkit: "1.11.0", warning: "cannot generate CDI"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := debianNode()
			f.Driver = &facts.Driver{Version: "550.127.08"}
			f.CDISpecs = tc.specs
			n := loadNode(t, "container {\n runtime = \"containerd\"\n nvidia_container_toolkit = \""+tc.toolkit+"\"\n cdi = true\n}")
			got, warnings := diffAll(t, n, f)
			c, ok := got[CDISpec]
			if tc.warning != "" {
				if ok || len(warnings) != 1 || !strings.Contains(warnings[0], tc.warning) {
					t.Fatalf("resource %v, warnings %q", ok, warnings)
				}
				return
			}
			if !ok || c.Action != tc.action {
				t.Fatalf("cdi_spec: %+v", c)
			}
			if tc.want != "" && (len(c.Steps) != 1 || callOf(t, c.Steps[0]).String() != tc.want) {
				t.Errorf("steps %+v, want one running %q", c.Steps, tc.want)
			}
		})
	}
}

// A config.toml that imports drop-ins the facts do not hold (here: facts
// without the probe's imports record) gets a warning: what they set
// overrides gpuform's keys. containerd's default "imports = []" does not.
// Drop-ins the probe read are judged in TestContainerdDropIn.
func TestContainerdImportsWarn(t *testing.T) {
	body := "container {\n runtime = \"containerd\"\n nvidia_container_toolkit = \"1.17.3\"\n}"
	for name, tc := range map[string]struct {
		file string
		warn bool
	}{
		"none":    {file: "containerd-1.6-default.toml"},
		"drop-in": {file: "", warn: true},
	} {
		t.Run(name, func(t *testing.T) {
			f := containerdFacts(t, tc.file)
			if tc.file == "" {
				f.ConfigFiles[ContainerdConfigFile] = configFile([]byte("imports = [\"/etc/containerd/conf.d/*.toml\"]\nversion = 2\n"))
			}
			_, warnings := diffAll(t, loadNode(t, body), f)
			got := len(warnings) == 1 && strings.Contains(warnings[0], "/etc/containerd/conf.d/*.toml")
			if got != tc.warn || !tc.warn && len(warnings) != 0 {
				t.Errorf("warnings %q", warnings)
			}
		})
	}
}

// runtimeOptions are the options of the runtime at path in a config dump.
func runtimeOptions(t *testing.T, dump []byte, path []string) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := toml.Unmarshal(dump, &doc); err != nil {
		t.Fatal(err)
	}
	m := doc
	for _, k := range append(slices.Clone(path), "options") {
		next, _ := m[k].(map[string]any)
		m = next
	}
	return m
}
