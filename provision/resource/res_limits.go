package resource

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// limitsReads declares what limits reads back on a node: the pending marker
// of an interrupted write (in pendingDir) and its limits.d file.
func limitsReads() facts.Reads {
	return facts.Reads{ManagedFiles: []string{LimitsFile}, ManagedDirs: []string{pendingDir}}
}

// buildLimits mirrors the container ulimits on the host. It is always
// planned: with none wanted, it removes gpuform's limits file.
func buildLimits(in *buildInput) ([]Resource, []string, error) {
	return []Resource{limitsResource(in.n, in.f)}, nil, nil
}

// limitsResource mirrors the container ulimits on the host through
// pam_limits, so that jobs run outside containers get the same memlock and
// stack limits (RDMA registration needs memlock). pam_limits counts memlock
// and stack in KiB. Several specs may share the file, each owning the
// items it declares (see keyShare): then only the spec's lines change.
func limitsResource(n *spec.Node, f *facts.Node) *fileResource {
	want := map[string]string{}
	lines := map[string]string{}
	var keys []string
	if n.Container != nil {
		for _, item := range []string{"memlock", "stack", "nofile", "nproc"} {
			a, ok := n.Container.Ulimits[item]
			if !ok {
				continue
			}
			v := "unlimited"
			if !a.V.Unlimited {
				x := a.V.Bytes
				if item == "memlock" || item == "stack" {
					x /= 1024
				}
				v = strconv.FormatUint(x, 10)
			}
			want[item] = v
			keys = append(keys, item)
			lines[item] = fmt.Sprintf("* soft %s %s\n* hard %s %s\n", item, v, item, v)
		}
	}
	curText, _ := f.ManagedFile(LimitsFile)
	fileKeys := limitsItems(curText)
	share := shareOf(n.Owner, f, Limits, fileKeys)
	drop := share.drop(want)
	kept := share.kept(fileKeys, want)
	r := &fileResource{
		base:    base{name: Limits},
		path:    LimitsFile,
		current: managedFile(LimitsFile),
		keyed:   share.keyedFile(want, fileKeys),
	}
	switch {
	case share.claims && len(kept) > 0:
		// Other specs' items stay: edit the spec's lines only.
		r.content = "wanted"
		r.edit = func(cur []byte, _ bool) (string, error) {
			if string(cur) != curText {
				return "", fmt.Errorf("the file was not read byte for byte, so gpuform will not edit the limits of other specs in it; probe again")
			}
			if len(keys) == 0 && len(drop) == 0 {
				return string(cur), nil
			}
			out := editKeyedLines(cur, limitsItem, keys, lines, drop)
			hdr := share.header(slices.Sorted(slices.Values(keys)), fileKeys, nil, "")
			if hdr == "" {
				hdr = managedHeader
			}
			return withHeader(out, hdr), nil
		}
	case len(keys) > 0:
		var b strings.Builder
		b.WriteString(header(n))
		for _, k := range keys {
			b.WriteString(lines[k])
		}
		r.content = b.String()
	}
	if len(keys) > 0 {
		r.desired = stringVals(want)
	}
	// The plan shows the items the spec declares or removes; without an
	// owner, every item of the file (all of them are the spec's).
	r.attrs = textAttrs(func(f *facts.Node, _ string, _ bool) map[string]string {
		all := limitAttrs(f)
		if !share.claims {
			return all
		}
		if len(keys) == 0 && len(drop) == 0 {
			return nil
		}
		out := map[string]string{}
		for _, k := range slices.Concat(keys, drop) {
			if v, ok := all[k]; ok {
				out[k] = v
			}
		}
		return out
	})
	if share.claims && len(keys) == 0 && len(drop) > 0 {
		r.desired = Values{}
	}
	return r
}

// limitsItem is the item a pam_limits line sets ("memlock" of "* soft
// memlock 1024"), "" for a comment or a blank line.
func limitsItem(line string) string {
	f := strings.Fields(line)
	if len(f) < 4 || strings.HasPrefix(f[0], "#") {
		return ""
	}
	return f[2]
}

// limitsItems returns the items a limits file sets, sorted.
func limitsItems(content string) []string {
	var out []string
	for _, line := range strings.Split(content, "\n") {
		if k := limitsItem(line); k != "" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// limitAttrs reads the soft limits gpuform's file sets.
func limitAttrs(f *facts.Node) map[string]string {
	out := map[string]string{}
	for _, l := range f.Limits {
		if l.File == LimitsFile && l.Domain == "*" && (l.Type == "soft" || l.Type == "-") {
			out[l.Item] = l.Value
		}
	}
	return out
}
