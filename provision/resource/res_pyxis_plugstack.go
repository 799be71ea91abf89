package resource

import (
	"fmt"
	"path"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
)

// PyxisPlugstackFile is the drop-in that loads pyxis into Slurm: the path
// pyxis's README links its pyxis.conf to, read by the
// "include /etc/slurm/plugstack.conf.d/*.conf" line of Debian's
// plugstack.conf (slurm-wlm-basic-plugins).
const PyxisPlugstackFile = "/etc/slurm/plugstack.conf.d/pyxis.conf"

// pyxisPlugstackReads declares what pyxis_plugstack reads back on a node:
// the pending marker of an interrupted write (in pendingDir) and the
// plugstack drop-in that loads pyxis, and slurmd, which loads it when it
// starts.
func pyxisPlugstackReads() facts.Reads {
	return facts.Reads{ConfigFiles: []string{PyxisPlugstackFile}, Units: []string{"slurmd.service"}, ManagedDirs: []string{pendingDir}}
}

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
	var then effect
	var restarts []string
	if n.Unit("slurmd.service").Enabled != "not-found" {
		// slurmd loads SPANK plugins when it starts (pyxis's README
		// restarts it after installing).
		then, restarts = tryRestart("slurmd.service"), []string{"slurmd.service"}
	}
	fr := &fileResource{
		base:    r.base,
		path:    PyxisPlugstackFile,
		content: "wanted",
		// The package's own pyxis.conf (the line alone) is adopted as it
		// is; gpuform's header is added only to a file it creates. In a
		// file that exists only the keyword and the plugin path of the
		// pyxis line are gpuform's: its arguments (container_scope=,
		// runtime_path=, …), comments and every other line are kept
		// byte for byte.
		edit: func(cur []byte, exists bool) (string, error) {
			if !exists {
				return r.hdr + line + "\n", nil
			}
			return editPlugstack(string(cur), line)
		},
		current: func(*facts.Node) (string, bool) {
			return string(cf.Data), cf.Exists
		},
		attrs: func(_ *facts.Node, cur string, exists bool) Values {
			if !exists {
				return nil
			}
			pl, _, _ := findPyxisLine(cur)
			return Values{"plugin": StringVal(pl)}
		},
		desired:  Values{"plugin": StringVal(line)},
		then:     then,
		restarts: restarts,
	}
	return fr.Diff(n)
}

// plugstackLine is one plugin line of a plugstack file as slurm's SPANK
// loader reads it (src/common/spank.c, _spank_stack_process_line): a line
// is "required|optional PLUGIN [ARGS…]" or "include GLOB"; '#' starts a
// comment; fields are separated by blanks.
type plugstackLine struct {
	// start and end are the byte offsets of the line, without its "\n".
	start, end int
	// ownEnd is where the plugin path ends: the bytes from the line's
	// start to it ("required /usr/lib/…/spank_pyxis.so", with any leading
	// blanks) are gpuform's; the rest (the plugin's arguments, a comment)
	// is the admin's.
	ownEnd int
	// own is the keyword and the path, joined by one space.
	own string
}

// findPyxisLine finds the line of content that loads spank_pyxis.so; more
// than one is an error (which one slurmd honours is not gpuform's to
// decide).
func findPyxisLine(content string) (string, *plugstackLine, error) {
	var found []plugstackLine
	for start := 0; start < len(content); {
		end := strings.IndexByte(content[start:], '\n')
		if end < 0 {
			end = len(content)
		} else {
			end += start
		}
		line := content[start:end]
		if code, _, _ := strings.Cut(line, "#"); true {
			f := strings.Fields(code)
			if len(f) >= 2 && (f[0] == "required" || f[0] == "optional") && path.Base(f[1]) == "spank_pyxis.so" {
				// The path ends where its field does.
				i := strings.Index(code, f[0]) + len(f[0])
				i += strings.Index(code[i:], f[1]) + len(f[1])
				found = append(found, plugstackLine{start: start, end: end, ownEnd: start + i, own: f[0] + " " + f[1]})
			}
		}
		start = end + 1
	}
	switch len(found) {
	case 0:
		return "", nil, nil
	case 1:
		return found[0].own, &found[0], nil
	}
	return "", nil, fmt.Errorf("%s loads pyxis %d times; keep one line (slurmd would load the plugin twice)", PyxisPlugstackFile, len(found))
}

// editPlugstack puts line ("required PATH") in place of the keyword and
// path of content's pyxis line, or adds it at the end when there is none.
func editPlugstack(content, line string) (string, error) {
	_, pl, err := findPyxisLine(content)
	if err != nil {
		return "", err
	}
	if pl == nil {
		if content != "" && !strings.HasSuffix(content, "\n") {
			content += "\n"
		}
		return content + line + "\n", nil
	}
	lead := content[pl.start:pl.ownEnd]
	indent := lead[:len(lead)-len(strings.TrimLeft(lead, " \t"))]
	return content[:pl.start] + indent + line + content[pl.ownEnd:], nil
}
