package resource

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/gres"
	"github.com/gpuform/gpuform/spec"
)

// gresBegin starts gpuform's block in gres.conf and gresEnd ends it: the
// file is the site's (other GRES, a cluster-wide file), and gpuform owns
// only the lines between the two.
const (
	gresBegin = "# BEGIN gpuform"
	gresEnd   = "# END gpuform"
)

// slurmdRestart makes slurmd read gres.conf again when it is running (a
// running slurmd reads it only at start); a node without slurmd has
// nothing to restart. Jobs keep running across a slurmd restart.
func slurmdRestart() Step {
	return systemdUnitStep("restart slurmd if it runs, so it reads gres.conf", unitRestartIfActive, "slurmd.service")
}

// gresConfReads declares what gres_conf reads back on a node: the pending
// marker of an interrupted write (in pendingDir) and gres.conf where Slurm
// reads it beside slurm.conf: /etc/slurm, or /etc/slurm-llnl on older Debian
// and Ubuntu packages.
func gresConfReads() facts.Reads {
	return facts.Reads{ConfigFiles: []string{spec.SlurmConfDir + "/gres.conf", spec.SlurmConfDirOld + "/gres.conf"}, ManagedDirs: []string{pendingDir}}
}

// buildGRESConf writes the node's GPUs into gres.conf as gpuform's block
// when the slurm block asks for GRES, keeping every other line.
func buildGRESConf(in *buildInput) ([]Resource, []string, error) {
	conf, err := gres.Render(in.n, in.f)
	if err != nil {
		// The spec and this host disagree (a bound NUMA node it lacks):
		// lines written anyway would tie GPUs to the wrong cores. Like the
		// binding, nothing is written and the plan says why.
		return nil, []string{fmt.Sprintf("%s not written: %v", in.n.Slurm.GRESConf(), err)}, nil
	}
	if conf == nil {
		// Lines an earlier spec wrote stay: removing them is the site's
		// call (slurm.conf's Gres= still counts the GPUs).
		return nil, nil, nil
	}
	path := in.n.Slurm.GRESConf()
	what := "the lines up to \"" + gresEnd + "\"; Slurm reads the other lines as they are"
	block := strings.TrimSuffix(headerFor(in.n.Owner, what), "\n")
	// Only the first line: the origin line would rewrite the file at
	// every new commit of the spec.
	block, _, _ = strings.Cut(block, "\n")
	block = gresBegin + strings.TrimPrefix(block, headerPrefix) + "\n" + conf.Text() + gresEnd + "\n"
	cur := currentFile(in.f, path)
	want := gresAttrs(block)
	if n := len(gresOthers(string(cur.Data))); n > 0 {
		want["other_lines"] = strconv.Itoa(n) + " kept"
	}
	return []Resource{&fileResource{
		base:    base{name: GRESConf},
		path:    path,
		content: "wanted",
		edit: func(cur []byte, _ bool) (string, error) {
			return setGRESBlock(string(cur), block, in.f.Hostname)
		},
		current: func(f *facts.Node) (string, bool) {
			c := currentFile(f, path)
			return string(c.Data), c.Exists
		},
		// other_lines is only in the after side: a change to the file
		// shows, as an added attribute, that the site's lines stay.
		attrs: textAttrs(func(_ *facts.Node, cur string, _ bool) map[string]string {
			b, _, _ := splitGRES(cur)
			return gresAttrs(b)
		}),
		desired:  stringVals(want),
		post:     []Step{slurmdRestart()},
		restarts: []string{"slurmd"},
	}}, nil, nil
}

// splitGRES cuts gres.conf into gpuform's block (begin and end lines
// included, "" when there is none) and the text before and after it.
func splitGRES(content string) (block, before, after string) {
	start := -1
	if strings.HasPrefix(content, gresBegin) {
		start = 0
	} else if i := strings.Index(content, "\n"+gresBegin); i >= 0 {
		start = i + 1
	}
	if start < 0 {
		return "", content, ""
	}
	rest := content[start:]
	end := strings.Index(rest, "\n"+gresEnd)
	if end < 0 {
		// No end line: the rest is gpuform's, as far as it can tell.
		return rest, content[:start], ""
	}
	stop := end + 1 + len(gresEnd)
	if stop < len(rest) && rest[stop] == '\n' {
		stop++
	}
	return rest[:stop], content[:start], rest[stop:]
}

// setGRESBlock puts block in gres.conf in place of gpuform's old block, or
// at the end. It refuses a file whose other lines describe GPUs too: slurmd
// would count each GPU twice, or detect them over the lines.
//
// The other lines are read as slurmd reads them (gres.ParseConf): "Name =
// gpu", Name="gpu", NAME=GPU and a NodeName= line naming host declare GPUs
// as much as Name=gpu does.
func setGRESBlock(cur, block, host string) (string, error) {
	old, before, after := splitGRES(cur)
	if old != "" && !strings.Contains(old, "\n"+gresEnd) {
		return "", fmt.Errorf("gpuform's block has no %q line; restore it (or remove the block) and plan again", gresEnd)
	}
	var clash []string
	for _, l := range gres.ParseConf(outsideBlock(cur)) {
		if l.DeclaresGPUs(host) {
			clash = append(clash, fmt.Sprintf("line %d (%s)", l.N, l.Text))
		}
	}
	if len(clash) > 0 {
		return "", fmt.Errorf("%s describe GPUs outside gpuform's lines: slurmd would read the GPUs twice. Remove them, or take slurm { gres } out of the spec, then plan again", strings.Join(clash, ", "))
	}
	if old == "" {
		if before != "" && !strings.HasSuffix(before, "\n") {
			before += "\n"
		}
		return before + block, nil
	}
	return before + block + after, nil
}

// outsideBlock is content with the lines of gpuform's block blanked, so
// that what is left keeps its line numbers.
func outsideBlock(content string) string {
	block, before, after := splitGRES(content)
	return before + strings.Repeat("\n", strings.Count(block, "\n")) + after
}

// gresLine is a gres.conf line outside gpuform's block.
type gresLine struct {
	n    int
	text string
}

// gresOthers returns the settings of gres.conf outside gpuform's block
// (comments and blank lines left out), with their line numbers.
func gresOthers(content string) []gresLine {
	block, before, after := splitGRES(content)
	var out []gresLine
	n := 0
	each := func(text string) {
		for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			n++
			if t, _, _ := strings.Cut(l, "#"); strings.TrimSpace(t) != "" {
				out = append(out, gresLine{n, strings.TrimSpace(t)})
			}
		}
	}
	if before != "" {
		each(before)
	}
	n += strings.Count(block, "\n")
	if after != "" {
		each(after)
	}
	return out
}

// gresAttrs reads gpuform's block as plan shows it: "gpu.0" =
// "Type=h100_sxm5_80gb File=/dev/nvidia0 Cores=0-55 Links=-1,1,…", or
// AutoDetect = "nvml".
func gresAttrs(block string) map[string]string {
	out := map[string]string{}
	i := 0
	for _, l := range strings.Split(block, "\n") {
		t, _, _ := strings.Cut(l, "#")
		f := strings.Fields(t)
		if len(f) == 0 {
			continue
		}
		if k, v, _ := strings.Cut(f[0], "="); strings.EqualFold(k, "AutoDetect") {
			out["AutoDetect"] = v
			continue
		}
		if strings.EqualFold(f[0], "Name=gpu") {
			f = f[1:]
		}
		out["gpu."+strconv.Itoa(i)] = strings.Join(f, " ")
		i++
	}
	return out
}
