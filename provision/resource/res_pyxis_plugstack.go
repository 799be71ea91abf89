package resource

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
)

// PyxisPlugstackFile is the drop-in that loads pyxis into Slurm: the path
// pyxis's README links its pyxis.conf to, read by the
// "include /etc/slurm/plugstack.conf.d/*.conf" line of Debian's
// plugstack.conf (slurm-wlm-basic-plugins).
const PyxisPlugstackFile = "/etc/slurm/plugstack.conf.d/pyxis.conf"

// buildPyxisPlugstack writes pyxis's plugstack line when the spec asks for
// pyxis.
func buildPyxisPlugstack(in *buildInput) ([]Resource, []string, error) {
	c := in.n.Container
	if c == nil || c.Runtime.V != "enroot" || !c.Pyxis.V {
		return nil, nil, nil
	}
	r := &pyxisResource{base: base{name: PyxisPlugstack}, hdr: headerFor(in.n.Owner, "the pyxis plugin line")}
	if c.PyxisVersion.Set {
		// gpuform installs pyxis first: the line names where the
		// package puts the plugin, installed yet or not.
		r.deps, r.plugin = []string{PyxisPackage}, pyxisPackagePlugin(in.family, in.f.Arch)
	}
	return []Resource{r}, nil, nil
}

// pyxisResource is one "required <plugin>" line, the line pyxis's own
// pyxis.conf holds (its Makefile writes 'required $(libdir)/slurm/spank_pyxis.so').
// "required" makes slurmd and srun fail loudly when the plugin cannot
// load, rather than run jobs without containers.
type pyxisResource struct {
	base
	hdr string
	// plugin is the path the line names when gpuform installs pyxis;
	// "" finds the plugin where the node has it.
	plugin string
}

func (r *pyxisResource) Diff(n *facts.Node) (Change, error) {
	plugin := r.plugin
	for _, p := range facts.PyxisPluginPaths() {
		if plugin == "" && n.Exists(p) {
			plugin = p
			break
		}
	}
	if plugin == "" {
		return Change{}, fmt.Errorf("%s: pyxis is not installed (no spank_pyxis.so in %s): install its package (nvslurm-plugin-pyxis, built against this node's Slurm), or set pyxis_version for gpuform to install it, then plan again", r.name, strings.Join(facts.PyxisPluginPaths(), ", "))
	}
	line := "required " + plugin
	cf := currentFile(n, PyxisPlugstackFile)
	then := ""
	var restarts []string
	if n.Unit("slurmd.service").Enabled != "not-found" {
		// slurmd loads SPANK plugins when it starts (pyxis's README
		// restarts it after installing).
		then, restarts = "systemctl try-restart slurmd.service", []string{"slurmd.service"}
	}
	fr := &fileResource{
		base:    r.base,
		path:    PyxisPlugstackFile,
		content: "wanted",
		// The package's own pyxis.conf (the line alone) is adopted as it
		// is; gpuform's header is added only when it writes.
		edit: func(cur []byte, _ bool) (string, error) { return r.hdr + line + "\n", nil },
		current: func(*facts.Node) (string, bool) {
			return string(cf.Data), cf.Exists
		},
		attrs: func(_ *facts.Node, cur string, exists bool) map[string]string {
			if !exists {
				return nil
			}
			return attrs{"plugin": plugstackPlugin(cur)}
		},
		desired:  attrs{"plugin": line},
		then:     then,
		restarts: restarts,
	}
	return fr.Diff(n)
}

// plugstackPlugin returns the plugin lines of a plugstack file, joined.
func plugstackPlugin(content string) string {
	var out []string
	for _, l := range strings.Split(content, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, strings.Join(strings.Fields(l), " "))
		}
	}
	return strings.Join(out, "; ")
}
