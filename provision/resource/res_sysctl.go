package resource

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// sysctlReads declares what sysctl reads back on a node: the pending marker
// of an interrupted write (in pendingDir) and its sysctl.d drop-in.
func sysctlReads() facts.Reads {
	return facts.Reads{ManagedFiles: []string{SysctlFile}, ManagedDirs: []string{pendingDir}}
}

// buildSysctl writes the spec's sysctls. It is always planned: with none
// wanted, it removes the drop-in gpuform wrote earlier.
func buildSysctl(in *buildInput) ([]Resource, []string, error) {
	r, err := sysctlResource(in.n, in.f)
	if err != nil {
		return nil, nil, err
	}
	return []Resource{r}, nil, nil
}

// sysctlResource writes the spec's sysctls, and kernel.numa_balancing from
// the numa block, to one drop-in and applies it with sysctl -p. Several
// specs may share the drop-in, each owning the keys it declares (see
// keyShare): then the spec's lines are set in place, its dropped keys'
// lines removed, and every other line kept byte for byte.
func sysctlResource(n *spec.Node, f *facts.Node) (*fileResource, error) {
	want := map[string]string{}
	for k, v := range n.Sysctl {
		want[k] = normSpace(v.V)
	}
	if n.NUMA != nil && n.NUMA.Balancing.Set {
		want["kernel.numa_balancing"] = map[bool]string{true: "1", false: "0"}[n.NUMA.Balancing.V]
	}
	keys := slices.Sorted(maps.Keys(want))
	for _, k := range keys {
		if err := check(sysctlKeyPattern, "sysctl name", k); err != nil {
			return nil, err
		}
		if err := check(sysctlValuePattern, "sysctl value", want[k]); err != nil {
			return nil, err
		}
	}
	curText, _ := f.ManagedFile(SysctlFile)
	fileKeys := slices.Sorted(maps.Keys(keyValueLines(curText)))
	share := shareOf(n.Owner, f, Sysctl, fileKeys)
	drop := share.drop(want)
	kept := share.kept(fileKeys, want)
	content := ""
	var edit func(cur []byte, exists bool) (string, error)
	if share.claims && len(kept) > 0 {
		// Other keys stay: edit the spec's lines only.
		content = "wanted"
		edit = func(cur []byte, _ bool) (string, error) {
			if string(cur) != curText {
				// The bytes to edit must be those whose keys were
				// shared out, or another spec's lines could be lost.
				return "", fmt.Errorf("the drop-in was not read byte for byte, so gpuform will not edit the keys of other specs in it; probe again")
			}
			if len(keys) == 0 && len(drop) == 0 {
				return string(cur), nil
			}
			out, err := setKeyLinesAs(cur, keys, want, drop, sysctlLine)
			if err != nil {
				return "", err
			}
			hdr := share.header(keys, fileKeys, nil, "")
			if hdr == "" {
				hdr = managedHeader
			}
			return withHeader(out, hdr), nil
		}
	} else if len(keys) > 0 {
		var b strings.Builder
		b.WriteString(header(n))
		for _, k := range keys {
			b.WriteString(sysctlLine(k, want[k]))
		}
		content = b.String()
	}
	// The plan shows the keys the spec declares or removes; without an
	// owner, every key of the file (all of them are the spec's).
	shown := slices.Concat(keys, drop)
	if !share.claims {
		shown = slices.Concat(keys, fileKeys)
	}
	desired := want
	if share.claims && len(keys) == 0 && len(drop) == 0 {
		// Nothing of this spec's here: no change to show.
		desired = nil
	}
	return &fileResource{
		base:    base{name: Sysctl},
		path:    SysctlFile,
		content: content,
		edit:    edit,
		keyed:   share.keyedFile(want, fileKeys),
		current: managedFile(SysctlFile),
		attrs: textAttrs(func(f *facts.Node, cur string, exists bool) map[string]string {
			if desired == nil {
				return nil
			}
			out := map[string]string{}
			inFile := keyValueLines(cur)
			for _, k := range shown {
				if _, ok := out[k]; ok {
					continue
				}
				if _, declared := want[k]; declared {
					if v, ok := f.Sysctl(k); ok {
						out[k] = normSpace(v)
						continue
					}
				}
				if v, ok := inFile[k]; ok {
					out[k] = v
				}
			}
			return out
		}),
		desired: stringVals(desired),
		precheck: func(f *facts.Node) error {
			for _, k := range keys {
				if exists, known := f.HasSysctl(k); known && !exists {
					return fmt.Errorf("sysctl %s does not exist on this node (no /proc/sys/%s): sysctl -p would reject the drop-in; check the name in the spec", k, strings.ReplaceAll(k, ".", "/"))
				}
			}
			return nil
		},
		live: func(f *facts.Node) bool {
			for _, k := range keys {
				if v, ok := f.Sysctl(k); ok && normSpace(v) != want[k] {
					return false
				}
			}
			return true
		},
		// Tools take paths as the node sees them; only the shell's own
		// file operations go through "$R".
		post: []Step{scriptStep("apply "+SysctlFile, sysctlApplyScript, SysctlFile, "if-present")},
	}, nil
}

// sysctlLine is one setting of a sysctl.d drop-in.
func sysctlLine(k, v string) string { return k + " = " + v + "\n" }
