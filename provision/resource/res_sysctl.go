package resource

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// buildSysctl writes the spec's sysctls. It is always planned: with none
// wanted, it removes the drop-in gpuform wrote earlier.
func buildSysctl(in *buildInput) ([]Resource, []string, error) {
	r, err := sysctlResource(in.n)
	if err != nil {
		return nil, nil, err
	}
	return []Resource{r}, nil, nil
}

// sysctlResource writes the spec's sysctls, and kernel.numa_balancing from
// the numa block, to one drop-in and applies it with sysctl -p.
func sysctlResource(n *spec.Node) (*fileResource, error) {
	want := map[string]string{}
	for k, v := range n.Sysctl {
		want[k] = normSpace(v.V)
	}
	if n.NUMA != nil && n.NUMA.Balancing.Set {
		want["kernel.numa_balancing"] = map[bool]string{true: "1", false: "0"}[n.NUMA.Balancing.V]
	}
	keys := slices.Sorted(maps.Keys(want))
	content := ""
	if len(keys) > 0 {
		var b strings.Builder
		b.WriteString(header(n))
		for _, k := range keys {
			if err := check(sysctlKeyPattern, "sysctl name", k); err != nil {
				return nil, err
			}
			if err := check(sysctlValuePattern, "sysctl value", want[k]); err != nil {
				return nil, err
			}
			fmt.Fprintf(&b, "%s = %s\n", k, want[k])
		}
		content = b.String()
	}
	return &fileResource{
		base:    base{name: Sysctl},
		path:    SysctlFile,
		content: content,
		current: managedFile(SysctlFile),
		attrs: func(f *facts.Node, cur string, exists bool) map[string]string {
			out := attrs{}
			inFile := keyValueLines(cur)
			for _, k := range keys {
				if v, ok := f.Sysctl(k); ok {
					out[k] = normSpace(v)
				} else if v, ok := inFile[k]; ok {
					out[k] = v
				}
			}
			for k, v := range inFile {
				if _, ok := out[k]; !ok {
					out[k] = v
				}
			}
			return out
		},
		desired: want,
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
		post: []Step{commandStep("apply "+SysctlFile, `[ ! -f "$R"`+q(SysctlFile)+` ] || sysctl -q -p `+q(SysctlFile))},
	}, nil
}
