package resource

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/gpuform/gpuform/internal/tomledit"
	"github.com/gpuform/gpuform/kb"
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

// containerdConfigReads declares what containerd_config reads back on a
// node: the pending marker of an interrupted write (in pendingDir),
// config.toml (its imports' drop-ins the probe follows on its own) and
// containerd.service.
func containerdConfigReads() facts.Reads {
	return facts.Reads{ConfigFiles: []string{ContainerdConfigFile}, ManagedDirs: []string{pendingDir}, Units: []string{"containerd.service"}}
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
	r := containerdConfig(in.kb, in.n, c)
	if c.NvidiaContainerToolkit.Set {
		r.deps = []string{ContainerToolkit}
	}
	var warnings []string
	if r.cdiWanted() {
		if pkg, ver, ok := containerdRelease(in.f); ok && !containerdReadsCDI(ver) {
			warnings = append(warnings, fmt.Sprintf("%s: containerd %s (package %s) ignores enable_cdi, which gpuform sets for the toolkit's CDI specs: CDI arrived in containerd 1.7, so pods asking for GPUs by CDI name get none; upgrade containerd to 1.7 or later, or ask for GPUs through the nvidia runtime", ContainerdConfig, ver, pkg))
		}
	}
	if cf, ok := in.f.ConfigFile(ContainerdConfigFile); ok && cf.Exists && cf.Error == "" {
		srcs, why, err := containerdImports(in.f, cf.Data)
		switch {
		case err != nil:
			// Diff refuses with the reason.
		case why != "":
			warnings = append(warnings, fmt.Sprintf("%s: %s imports %s, which containerd reads over it (a plugin's table there replaces config.toml's whole before containerd 2.1), but %s; check that none of them sets the nvidia runtime differently (%s)", ContainerdConfig, ContainerdConfigFile, strings.Join(importPatterns(cf.Data), ", "), why, toolkitDropIn(in.kb)))
		default:
			if own := criOwner(srcs, cf.Data); own != nil {
				warnings = append(warnings, fmt.Sprintf("%s: containerd's CRI settings are in %s, which %s imports (%s): gpuform checks the runtime there, adds no second runtime table to %s, and does not edit a file it did not write", ContainerdConfig, own.path, ContainerdConfigFile, toolkitDropIn(in.kb), ContainerdConfigFile))
			}
		}
	}
	return []Resource{r}, warnings, nil
}

// containerdRelease is the containerd the node has installed: Docker's
// containerd.io package, or the distribution's containerd.
func containerdRelease(f *facts.Node) (pkg, version string, ok bool) {
	for _, p := range []string{"containerd.io", "containerd"} {
		if v, ok := f.Package(p); ok && v != "" {
			return p, v, true
		}
	}
	return "", "", false
}

// containerdReadsCDI reports whether a containerd package version reads
// the CRI plugin's enable_cdi: containerd 1.7.0 added CDI device
// injection (its release notes, "Support for CDI device injection");
// 1.6 decodes the CRI config without the key and drops it silently. A
// version gpuform cannot read is given the benefit of the doubt.
func containerdReadsCDI(pkgVersion string) bool {
	v := pkgVersion
	if _, after, ok := strings.Cut(v, ":"); ok {
		v = after // a Debian epoch
	}
	parts := strings.FieldsFunc(v, func(r rune) bool { return r == '~' || r == '-' || r == '+' })
	if len(parts) == 0 {
		return true
	}
	cv, err := kb.ParseVersion(parts[0])
	if err != nil {
		return true
	}
	min, _ := kb.ParseVersion("1.7")
	return cv.Compare(min) >= 0
}

// containerdResource sets the NVIDIA runtime (and, when asked, the default
// runtime and CDI) in /etc/containerd/config.toml, editing the file as
// TOML: every other table, key and comment is kept byte for byte.
type containerdResource struct {
	base
	kb *kb.KB
	n  *spec.Node
	c  *spec.Container
}

func containerdConfig(k *kb.KB, n *spec.Node, c *spec.Container) *containerdResource {
	return &containerdResource{base: base{name: ContainerdConfig}, kb: k, n: n, c: c}
}

// cdiWanted reports whether the spec's toolkit generates CDI specs
// (the knowledge base's feature table: cdi-generate), so that containerd is told
// to read them. containerd before 1.7 ignores the key.
func (r *containerdResource) cdiWanted() bool {
	if !r.c.NvidiaContainerToolkit.Set {
		return false
	}
	v, err := kb.ParseVersion(strings.SplitN(r.c.NvidiaContainerToolkit.V.Raw, "-", 2)[0])
	if err != nil {
		return false
	}
	t, _ := r.kb.ToolkitSupports(v, "cdi-generate")
	return t == kb.Yes
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
	// nvidia-ctk starts the nvidia runtime from the default runtime's
	// options (runc's): the nvidia runtime inherits every one of them but
	// BinaryName, which is gpuform's. The one that matters most is the
	// cgroup driver: a pod under the nvidia runtime with cgroupfs on a
	// node whose kubelet uses systemd fails to start. They are read
	// however the file writes them: an options table, dotted keys, or an
	// inline table (options = { SystemdCgroup = true }).
	// The spec's containerd_runtime_options override what is inherited.
	opts := map[string]string{}
	for _, o := range inheritedOptions(d, rt) {
		opts[o.key] = o.value
	}
	for k, a := range r.c.ContainerdRuntimeOptions {
		opts[k] = optionValue(a.V)
	}
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		ks = append(ks, containerdKey{attr: "runtimes.nvidia.options." + k, path: append(slices.Clone(nv), "options", k), value: opts[k]})
	}
	return ks
}

// runtimeOption is one key of a runtime's options, as TOML text.
type runtimeOption struct{ key, value string }

// inheritedOptions are the options of the runtime the nvidia runtime is
// made from: the default runtime's when default_runtime_name names one
// other than nvidia that the file defines, else runc's. Only scalar values
// are copied (every option runc's shim takes is one: SystemdCgroup,
// NoPivotRoot, NoNewKeyring, ShimCgroup, IoUid, IoGid, Root, CriuPath, …).
func inheritedOptions(d *tomledit.Doc, rt []string) []runtimeOption {
	var doc map[string]any
	if err := toml.Unmarshal(d.Bytes(), &doc); err != nil {
		return nil
	}
	table := func(m map[string]any, path ...string) map[string]any {
		for _, k := range path {
			next, ok := m[k].(map[string]any)
			if !ok {
				return nil
			}
			m = next
		}
		return m
	}
	runtimes := table(doc, append(slices.Clone(rt), "runtimes")...)
	if runtimes == nil {
		return nil
	}
	from := "runc"
	if def, ok := table(doc, rt...)["default_runtime_name"].(string); ok && def != "nvidia" && table(runtimes, def) != nil {
		from = def
	}
	opts := table(runtimes, from, "options")
	var out []runtimeOption
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		if k == "BinaryName" || !tomledit.BareKey(k) {
			continue
		}
		var v string
		switch x := opts[k].(type) {
		case bool:
			v = strconv.FormatBool(x)
		case int64:
			v = strconv.FormatInt(x, 10)
		case string:
			v = tomledit.String(x)
		default:
			continue
		}
		out = append(out, runtimeOption{k, v})
	}
	return out
}

// optionValue is a containerd_runtime_options value as TOML: a boolean,
// a whole number, or a string.
func optionValue(v string) string {
	if v == "true" || v == "false" {
		return v
	}
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return v
	}
	return tomledit.String(v)
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
	out := map[string]string{}
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
	out := map[string]string{}
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
	if cf.Exists {
		srcs, _, err := containerdImports(n, cf.Data)
		if err != nil {
			return Change{}, fmt.Errorf("%s: %w", r.name, err)
		}
		if own := criOwner(srcs, cf.Data); own != nil {
			return r.diffDropIn(own)
		}
	}
	want, err := r.desired(cur, cf.Exists)
	if err != nil {
		return Change{}, fmt.Errorf("%s: %s %w", r.name, ContainerdConfigFile, err)
	}
	before, err := r.attrs(cur, cf.Exists)
	if err != nil {
		return Change{}, fmt.Errorf("%s: %s %w", r.name, ContainerdConfigFile, err)
	}
	var then effect
	var restarts []string
	if n.Unit("containerd.service").Enabled != "not-found" {
		// containerd reads config.toml only at start: the write and the
		// restart are one step, and a failed restart restores the file.
		then, restarts = tryRestart("containerd.service"), []string{"containerd.service"}
	}
	fr := &fileResource{
		base:    r.base,
		path:    ContainerdConfigFile,
		content: "wanted",
		edit:    r.edit,
		current: func(*facts.Node) (string, bool) { return cur, cf.Exists },
		attrs: func(*facts.Node, string, bool) Values {
			if !cf.Exists {
				return nil
			}
			return stringVals(before)
		},
		desired:  stringVals(want),
		then:     then,
		restarts: restarts,
	}
	return fr.Diff(n)
}

// containerdSource is a file containerd merges over config.toml.
type containerdSource struct {
	path string
	data []byte
	doc  *tomledit.Doc
}

// toolkitDropIn says where nvidia-ctk puts its containerd drop-in, from
// the knowledge base's feature table.
func toolkitDropIn(k *kb.KB) string {
	f, ok := k.ToolkitFeature("containerd-drop-in")
	g, ok2 := k.ToolkitFeature("containerd-drop-in-conf-d")
	if !ok || !ok2 {
		return "newer nvidia-ctk writes the nvidia runtime to such a drop-in"
	}
	return fmt.Sprintf("nvidia-ctk %s and later writes the nvidia runtime to such a drop-in: %s, %s from %s", f.MinToolkit, f.Value, g.Value, g.MinToolkit)
}

// importPatterns are config.toml's top-level imports as written.
func importPatterns(main []byte) []string {
	var top struct {
		Imports []string `toml:"imports"`
	}
	if toml.Unmarshal(main, &top) != nil {
		return nil
	}
	return top.Imports
}

// containerdImports returns the files config.toml imports, in the order
// containerd merges them (each pattern in turn, its matches sorted), as the
// probe read them. why says what the facts lack when they do not hold
// every file; err is set for an imported file that is not TOML, which
// containerd refuses too.
func containerdImports(f *facts.Node, main []byte) (srcs []containerdSource, why string, err error) {
	imports := importPatterns(main)
	if len(imports) == 0 {
		return nil, "", nil
	}
	if f.ContainerdImports == nil {
		return nil, "the probe did not read them", nil
	}
	for _, p := range imports {
		if !path.IsAbs(p) {
			// containerd joins a relative import to config.toml's directory.
			p = path.Join(path.Dir(ContainerdConfigFile), p)
		}
		i := slices.IndexFunc(f.ContainerdImports, func(c facts.ContainerdImport) bool { return c.Pattern == p })
		switch {
		case i < 0:
			return nil, "the probe did not expand " + p, nil
		case f.ContainerdImports[i].Unread:
			return nil, p + " has a wildcard in a directory, which gpuform does not expand", nil
		}
		for _, file := range f.ContainerdImports[i].Files {
			cf, ok := f.ConfigFile(file)
			if !ok || !cf.Exists || cf.Error != "" {
				return nil, file + " could not be read (" + cf.Error + ")", nil
			}
			d, perr := tomledit.Parse(cf.Data)
			if perr != nil {
				return nil, "", fmt.Errorf("%s, which %s imports, is not TOML (%v): containerd will not start with it; fix it, then plan again", file, ContainerdConfigFile, perr)
			}
			srcs = append(srcs, containerdSource{path: file, data: cf.Data, doc: d})
		}
	}
	return srcs, "", nil
}

// criOwner returns the imported file whose CRI plugin table containerd
// runs with, or nil when that is config.toml's own. Before containerd
// 2.1 a plugin's table in an imported file replaces the one before it
// whole (containerd/containerd#5837), which is why nvidia-ctk copies
// config.toml's CRI table into its drop-in; the last file that has the
// table wins.
func criOwner(srcs []containerdSource, main []byte) *containerdSource {
	d, err := tomledit.Parse(main)
	if err != nil {
		return nil
	}
	v, err := configVersion(d)
	if err != nil {
		return nil
	}
	cri, _ := criPlugin(v)
	for i := len(srcs) - 1; i >= 0; i-- {
		if srcs[i].doc.HasTable("plugins", cri) {
			return &srcs[i]
		}
	}
	return nil
}

// diffDropIn judges the nvidia runtime where an imported file holds the
// CRI settings: gpuform edits only files it wrote, so a drop-in that says
// what the spec asks is no change, and one that says otherwise is a
// conflict the operator settles in that file.
func (r *containerdResource) diffDropIn(own *containerdSource) (Change, error) {
	before, err := r.attrs(string(own.data), true)
	if err != nil {
		return Change{}, fmt.Errorf("%s: %s (imported by %s) %w", r.name, own.path, ContainerdConfigFile, err)
	}
	want, err := r.desired(string(own.data), true)
	if err != nil {
		return Change{}, fmt.Errorf("%s: %s (imported by %s) %w", r.name, own.path, ContainerdConfigFile, err)
	}
	before, want = maps.Clone(before), maps.Clone(want)
	if !r.c.CDI.V {
		// gpuform turns CDI on in a config.toml it edits because the
		// toolkit generates specs; in a file it does not own it judges
		// enable_cdi only when the spec asks for CDI (nvidia-ctk writes it
		// only with --cdi.enabled).
		delete(before, "enable_cdi")
		delete(want, "enable_cdi")
	}
	var differ []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got, ok := before[k]; !ok || strings.Trim(got, `"`) != want[k] {
			g := "(none)"
			if ok {
				g = got
			}
			differ = append(differ, fmt.Sprintf("%s = %s, the spec wants %s", k, g, want[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if _, ok := want[k]; !ok {
			differ = append(differ, fmt.Sprintf("%s = %s, the spec wants it unset", k, before[k]))
		}
	}
	if len(differ) > 0 {
		return Change{}, fmt.Errorf("%s: conflict: %s, which %s imports, holds containerd's CRI settings (containerd reads it over %s) and sets %s; gpuform does not edit a file it did not write: change it there (nvidia-ctk runtime configure --runtime=containerd rewrites it) or remove it, then plan again", r.name, own.path, ContainerdConfigFile, ContainerdConfigFile, strings.Join(differ, "; "))
	}
	before["configured_in"], want["configured_in"] = own.path, own.path
	c := r.change(stringVals(before), stringVals(want))
	c.Path = own.path
	return c, nil
}
