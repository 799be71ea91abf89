package resource

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/internal/tomledit"
	"github.com/gpuform/gpuform/lint/compat"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// What nvidia-ctk runtime configure --runtime=containerd writes, read from
// NVIDIA/nvidia-container-toolkit pkg/config/engine/containerd
// (containerd.go: defaultRuntimeType, the CRI plugin name per config
// version; config.go: AddRuntimeWithOptions sets runtime_type and
// options.BinaryName under plugins.<cri>.containerd.runtimes.<name>,
// default_runtime_name beside runtimes, and EnableCDI sets
// plugins.<cri>.enable_cdi), at commit d34b3046758cb1a5db606b2a39519c731bbf9f56.
const (
	// containerdRuntimeType is the shim the nvidia runtime runs under.
	containerdRuntimeType = "io.containerd.runc.v2"
	// containerdNvidiaBinary is the runtime binary the toolkit installs
	// (nvidia-ctk's --nvidia-runtime-path default directory is /usr/bin).
	containerdNvidiaBinary = "/usr/bin/nvidia-container-runtime"
	// containerdNewVersion is the config version of a file gpuform
	// creates: nvidia-ctk's defaultConfigVersion, which containerd 1.x
	// reads and containerd 2.x migrates when it loads it.
	containerdNewVersion = "2"
)

// criPlugin is the CRI runtime plugin's name in each config version
// containerd edits: config version 3 (containerd 2.0) split the CRI plugin
// and renamed it (https://github.com/containerd/containerd/blob/main/docs/cri/config.md,
// "Config versions").
func criPlugin(version string) (name string, ok bool) {
	switch version {
	case "2":
		return "io.containerd.grpc.v1.cri", true
	case "3":
		return "io.containerd.cri.v1.runtime", true
	}
	return "", false
}

// buildContainerdConfig registers the NVIDIA runtime in containerd's
// config.toml when the node runs containerd.
func buildContainerdConfig(in *buildInput) ([]Resource, []string, error) {
	c := in.n.Container
	if c == nil || c.Runtime.V != "containerd" {
		return nil, nil, nil
	}
	if !c.NvidiaContainerToolkit.Set && !c.DefaultRuntime.Set {
		return nil, nil, nil
	}
	r := containerdConfig(in.n, c)
	if c.NvidiaContainerToolkit.Set {
		r.deps = []string{ContainerToolkit}
	}
	var warnings []string
	if cf, ok := in.f.ConfigFile(ContainerdConfigFile); ok && cf.Exists {
		// Files named in imports are merged over config.toml (before
		// containerd 2.1 a plugin's table there replaces config.toml's
		// whole: containerd/containerd#5837); newer nvidia-ctk writes its
		// runtime to such a drop-in. gpuform does not read them.
		if d, err := tomledit.Parse(cf.Data); err == nil {
			if imp, ok := d.Lookup("imports"); ok && strings.Trim(imp.Text, "[] \t\n") != "" {
				warnings = append(warnings, fmt.Sprintf("%s imports %s: settings in those files override gpuform's keys in %s, and gpuform does not read them; check that none of them sets the nvidia runtime differently (nvidia-ctk 1.18 and later writes /etc/containerd/conf.d/99-nvidia.toml)", ContainerdConfigFile, imp.Text, ContainerdConfigFile))
			}
		}
	}
	return []Resource{r}, warnings, nil
}

// containerdResource sets the NVIDIA runtime (and, when asked, the default
// runtime and CDI) in /etc/containerd/config.toml, editing the file as
// TOML: every other table, key and comment is kept byte for byte.
type containerdResource struct {
	base
	n *spec.Node
	c *spec.Container
}

func containerdConfig(n *spec.Node, c *spec.Container) *containerdResource {
	return &containerdResource{base: base{name: ContainerdConfig}, n: n, c: c}
}

// cdiWanted reports whether the spec's toolkit generates CDI specs
// (lint/compat's feature table: cdi-generate), so that containerd is told
// to read them. containerd before 1.7 ignores the key.
func (r *containerdResource) cdiWanted() bool {
	if !r.c.NvidiaContainerToolkit.Set {
		return false
	}
	v, err := compat.ParseVersion(strings.SplitN(r.c.NvidiaContainerToolkit.V.Raw, "-", 2)[0])
	if err != nil {
		return false
	}
	t, _ := compat.Default().ToolkitSupports(v, "cdi-generate")
	return t == compat.Yes
}

// containerdKey is one key gpuform owns in config.toml: its path below
// the CRI plugin's table and the attribute the plan shows for it.
type containerdKey struct {
	attr string
	path []string
	// value is the TOML text; "" removes the key when it holds drop.
	value string
	drop  string
}

// keys are the keys gpuform owns in a document of config version v.
func (r *containerdResource) keys(d *tomledit.Doc, v string) []containerdKey {
	name, _ := criPlugin(v)
	cri := []string{"plugins", name}
	rt := append(slices.Clone(cri), "containerd")
	nv := append(slices.Clone(rt), "runtimes", "nvidia")
	// The plugin-wide keys first: in a new file their table then comes
	// before the runtimes'.
	var ks []containerdKey
	if r.cdiWanted() {
		ks = append(ks, containerdKey{attr: "enable_cdi", path: append(slices.Clone(cri), "enable_cdi"), value: "true"})
	}
	if r.c.DefaultRuntime.Set {
		k := containerdKey{attr: "default_runtime_name", path: append(slices.Clone(rt), "default_runtime_name")}
		if r.c.DefaultRuntime.V {
			k.value = tomledit.String("nvidia")
		} else {
			k.drop = "nvidia"
		}
		ks = append(ks, k)
	}
	if !r.c.NvidiaContainerToolkit.Set && !r.c.DefaultRuntime.V {
		// default_runtime = false alone: only take nvidia off as the
		// default, as daemon.json's does.
		return ks
	}
	ks = append(ks, []containerdKey{
		{attr: "runtimes.nvidia.runtime_type", path: append(slices.Clone(nv), "runtime_type"), value: tomledit.String(containerdRuntimeType)},
		{attr: "runtimes.nvidia.options.BinaryName", path: append(slices.Clone(nv), "options", "BinaryName"), value: tomledit.String(containerdNvidiaBinary)},
	}...)
	// nvidia-ctk starts the nvidia runtime from runc's options; the one
	// that matters is the cgroup driver: a pod under the nvidia runtime
	// with cgroupfs on a node whose kubelet uses systemd fails to start.
	if sc, ok := d.Lookup(append(slices.Clone(rt), "runtimes", "runc", "options", "SystemdCgroup")...); ok && sc.Kind == "Bool" {
		ks = append(ks, containerdKey{attr: "runtimes.nvidia.options.SystemdCgroup", path: append(slices.Clone(nv), "options", "SystemdCgroup"), value: sc.Text})
	}
	return ks
}

// parseContainerdConfig reads config.toml; an error says what to do.
func parseContainerdConfig(src []byte) (*tomledit.Doc, error) {
	d, err := tomledit.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("is not TOML (%v); gpuform will not rewrite a file it cannot read: fix it, then plan again", err)
	}
	return d, nil
}

// configVersion reads the document's config version: "2" or "3", or an
// error for version 1 (no version key) and anything else.
func configVersion(d *tomledit.Doc) (string, error) {
	if d.Empty() {
		return containerdNewVersion, nil
	}
	v, ok := d.Lookup("version")
	if !ok {
		return "", errors.New("has no version key, so containerd reads it as config version 1, which gpuform does not edit: convert it to version 2 (containerd ≥ 2.0: containerd config migrate), then plan again")
	}
	if _, ok := criPlugin(v.Text); !ok || v.Kind != "Integer" {
		return "", fmt.Errorf("is config version %s; gpuform edits versions 2 and 3", v.Text)
	}
	return v.Text, nil
}

// edit sets gpuform's keys in the file's bytes (none: a new file).
func (r *containerdResource) edit(cur []byte, exists bool) (string, error) {
	if !exists {
		cur = nil
	}
	d, err := parseContainerdConfig(cur)
	if err != nil {
		return "", err
	}
	v, err := configVersion(d)
	if err != nil {
		return "", err
	}
	var edits []tomledit.Edit
	if d.Empty() {
		edits = append(edits, tomledit.Edit{Path: []string{"version"}, Value: v})
	}
	for _, k := range r.keys(d, v) {
		if k.value != "" {
			if got, ok := d.Lookup(k.path...); ok && tomledit.String(got.Text) == k.value || ok && got.Text == k.value && got.Kind != "String" {
				continue
			}
			edits = append(edits, tomledit.Edit{Path: k.path, Value: k.value})
		} else if got, ok := d.Lookup(k.path...); ok && got.Text == k.drop {
			edits = append(edits, tomledit.Edit{Path: k.path, Delete: true})
		}
	}
	out, err := tomledit.Apply(cur, edits)
	if err != nil {
		return "", err
	}
	if !r.n.Owner.Claims() {
		return string(out), nil
	}
	return withHeader(string(out), headerFor(r.n.Owner, "the NVIDIA runtime's keys; every other setting is left as it is")), nil
}

// attrs reads gpuform's keys from a config.toml, for the plan.
func (r *containerdResource) attrs(content string, exists bool) (map[string]string, error) {
	out := attrs{}
	if !exists {
		return out, nil
	}
	d, err := parseContainerdConfig([]byte(content))
	if err != nil {
		return nil, err
	}
	v, err := configVersion(d)
	if err != nil {
		return nil, err
	}
	for _, k := range r.keys(d, v) {
		if got, ok := d.Lookup(k.path...); ok {
			out[k.attr] = got.Text
		}
	}
	return out, nil
}

// desired are the attributes after the change.
func (r *containerdResource) desired(cur string, exists bool) (map[string]string, error) {
	var src []byte
	if exists {
		src = []byte(cur)
	}
	d, err := parseContainerdConfig(src)
	if err != nil {
		return nil, err
	}
	v, err := configVersion(d)
	if err != nil {
		return nil, err
	}
	out := attrs{}
	for _, k := range r.keys(d, v) {
		switch {
		case k.value != "":
			out[k.attr] = strings.Trim(k.value, `"`)
		default:
			if got, ok := d.Lookup(k.path...); ok && got.Text != k.drop {
				out[k.attr] = got.Text
			}
		}
	}
	return out, nil
}

func (r *containerdResource) Diff(n *facts.Node) (Change, error) {
	cf := currentFile(n, ContainerdConfigFile)
	if cf.Error != "" {
		return Change{}, fmt.Errorf("%s: %s: gpuform will not rewrite it: %s", r.name, ContainerdConfigFile, cf.Error)
	}
	cur := string(cf.Data)
	want, err := r.desired(cur, cf.Exists)
	if err != nil {
		return Change{}, fmt.Errorf("%s: %s %w", r.name, ContainerdConfigFile, err)
	}
	before, err := r.attrs(cur, cf.Exists)
	if err != nil {
		return Change{}, fmt.Errorf("%s: %s %w", r.name, ContainerdConfigFile, err)
	}
	then := ""
	var restarts []string
	if n.Unit("containerd.service").Enabled != "not-found" {
		// containerd reads config.toml only at start: the write and the
		// restart are one step, and a failed restart restores the file.
		then, restarts = "systemctl try-restart containerd.service", []string{"containerd.service"}
	}
	fr := &fileResource{
		base:    r.base,
		path:    ContainerdConfigFile,
		content: "wanted",
		edit:    r.edit,
		current: func(*facts.Node) (string, bool) { return cur, cf.Exists },
		attrs: func(*facts.Node, string, bool) map[string]string {
			if !cf.Exists {
				return nil
			}
			return maps.Clone(before)
		},
		desired:  want,
		then:     then,
		restarts: restarts,
	}
	return fr.Diff(n)
}
