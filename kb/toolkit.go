package kb

import (
	"sort"
	"strings"
)

// ToolkitRelease is one NVIDIA Container Toolkit release of
// container-toolkit.tsv.
type ToolkitRelease struct {
	// Version is the release ("1.17.3").
	Version Version
	// Tag and Date are the git tag and its commit date (YYYY-MM-DD).
	Tag, Date string
	// AptVersion and RPMVersion are the package version strings ("1.17.3-1").
	AptVersion, RPMVersion string
	Fact
}

// ToolkitFeature is a container toolkit capability that starts at a
// release (container-toolkit-features.tsv), or the toolkit's driver
// requirement (feature "min-driver", whose MinToolkit is zero).
type ToolkitFeature struct {
	// Name is the feature id ("cdi-generate", "cdi-auto-refresh", …).
	Name string
	// MinToolkit is the first toolkit release with the feature.
	MinToolkit Version
	// Value is the command, service or driver version the row names.
	Value string
	Fact
}

// RuntimeConfig is one row of nvidia-ctk.tsv: how to register the NVIDIA
// runtime with a container engine.
type RuntimeConfig struct {
	// Runtime is the engine as the table writes it ("docker", "containerd
	// (Kubernetes)", "cri-o", "podman", …).
	Runtime string
	// Command configures it; ConfigWritten is the file it writes; Restart
	// restarts the engine.
	Command, ConfigWritten, Restart string
	Fact
}

func (kb *KB) loadToolkit() error {
	t, err := readTable(kb.fsys, "data/container-toolkit.tsv", "version", "git_tag", "tagged_commit_date",
		"apt_version_string", "rpm_version_release", "notes", "status", "source")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		v, err := ParseVersion(r.get("version"))
		if err != nil || !v.IsExact() {
			return r.errorf("version %q: want x.y.z", r.get("version"))
		}
		kb.toolkit = append(kb.toolkit, ToolkitRelease{
			Version: v, Tag: r.get("git_tag"), Date: r.get("tagged_commit_date"),
			AptVersion: r.get("apt_version_string"), RPMVersion: r.get("rpm_version_release"),
			Fact: r.fact(st, "source", "notes"),
		})
	}
	sort.Slice(kb.toolkit, func(i, j int) bool { return kb.toolkit[i].Version.Less(kb.toolkit[j].Version) })

	t, err = readTable(kb.fsys, "data/container-toolkit-features.tsv", "feature", "min_toolkit_version", "value", "status", "sources", "notes")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		f := ToolkitFeature{Name: r.get("feature"), Value: r.get("value"), Fact: r.fact(st, "sources", "notes")}
		if c := r.get("min_toolkit_version"); c != "" {
			if f.MinToolkit, err = ParseVersion(c); err != nil {
				return r.errorf("min_toolkit_version: %v", err)
			}
		}
		if _, dup := kb.features[f.Name]; dup {
			return r.errorf("feature %s defined twice", f.Name)
		}
		kb.features[f.Name] = f
	}

	t, err = readTable(kb.fsys, "data/nvidia-ctk.tsv", "runtime", "command", "config_written", "restart", "notes", "status", "source")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		kb.runtimes = append(kb.runtimes, RuntimeConfig{
			Runtime: r.get("runtime"), Command: r.get("command"), ConfigWritten: r.get("config_written"),
			Restart: r.get("restart"), Fact: r.fact(st, "source", "notes"),
		})
	}
	return nil
}

// ContainerToolkit finds a container toolkit release ("1.17.3" or "v1.17.3").
// ok is false for releases not in the knowledge base, such as ones newer than
// the table.
func (kb *KB) ContainerToolkit(v Version) (ToolkitRelease, bool) {
	for _, r := range kb.toolkit {
		if r.Version.Compare(v) == 0 && v.Len() == 3 {
			return r, true
		}
	}
	return ToolkitRelease{}, false
}

// ContainerToolkitReleases returns every release, oldest first.
func (kb *KB) ContainerToolkitReleases() []ToolkitRelease {
	return append([]ToolkitRelease(nil), kb.toolkit...)
}

// ToolkitFeature returns a feature row by id: "cdi-generate",
// "cdi-docker-enable", "cdi-auto-refresh", "min-driver".
func (kb *KB) ToolkitFeature(name string) (ToolkitFeature, bool) {
	f, ok := kb.features[name]
	return f, ok
}

// ToolkitSupports answers "does toolkit release v have feature?": Yes when
// v is at or above the feature's first release, No below it, Unknown for an
// unknown feature or a floating v below the first release's series.
func (kb *KB) ToolkitSupports(v Version, feature string) (Tri, Fact) {
	f, ok := kb.features[feature]
	if !ok || f.MinToolkit.IsZero() || v.IsZero() {
		return Unknown, f.Fact
	}
	if v.Compare(f.MinToolkit) >= 0 {
		return Yes, f.Fact
	}
	if !v.IsExact() && f.MinToolkit.Within(v) {
		// "1.14" against a feature of 1.14.5: depends on the patch release.
		return Unknown, f.Fact
	}
	return No, f.Fact
}

// ToolkitMinDriver is the driver the container toolkit needs, as far as the
// knowledge base knows (the current install guide states none; an older
// figure is secondary).
func (kb *KB) ToolkitMinDriver() (DriverMinimum, bool) {
	f, ok := kb.features["min-driver"]
	if !ok {
		return DriverMinimum{}, false
	}
	v, err := ParseDriverVersion(f.Value)
	if err != nil {
		return DriverMinimum{}, false
	}
	return DriverMinimum{Driver: v, Fact: f.Fact}, true
}

// RuntimeConfig returns how to configure a container engine ("docker",
// "containerd", "cri-o", "podman"); the first row whose runtime starts with
// the name wins, so "docker" is the rootful Docker row.
func (kb *KB) RuntimeConfig(runtime string) (RuntimeConfig, bool) {
	n := strings.ToLower(strings.TrimSpace(runtime))
	if n == "crio" {
		n = "cri-o"
	}
	for _, r := range kb.runtimes {
		if strings.HasPrefix(strings.ToLower(r.Runtime), n) {
			return r, true
		}
	}
	return RuntimeConfig{}, false
}
