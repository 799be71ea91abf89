package resource

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// buildLimits mirrors the container ulimits on the host. It is always
// planned: with none wanted, it removes gpuform's limits file.
func buildLimits(in *buildInput) ([]Resource, []string, error) {
	return []Resource{limitsResource(in.n)}, nil, nil
}

// limitsResource mirrors the container ulimits on the host through
// pam_limits, so that jobs run outside containers get the same memlock and
// stack limits (RDMA registration needs memlock). pam_limits counts memlock
// and stack in KiB.
func limitsResource(n *spec.Node) *fileResource {
	if n.Container == nil || len(n.Container.Ulimits) == 0 {
		return &fileResource{base: base{name: Limits}, path: LimitsFile, current: managedFile(LimitsFile),
			attrs: func(f *facts.Node, cur string, _ bool) map[string]string { return limitAttrs(f) }}
	}
	var b strings.Builder
	b.WriteString(header(n))
	want := attrs{}
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
		fmt.Fprintf(&b, "* soft %s %s\n* hard %s %s\n", item, v, item, v)
	}
	return &fileResource{
		base:    base{name: Limits},
		path:    LimitsFile,
		content: b.String(),
		current: managedFile(LimitsFile),
		attrs:   func(f *facts.Node, _ string, _ bool) map[string]string { return limitAttrs(f) },
		desired: want,
	}
}

// limitAttrs reads the soft limits gpuform's file sets.
func limitAttrs(f *facts.Node) map[string]string {
	out := attrs{}
	for _, l := range f.Limits {
		if l.File == LimitsFile && l.Domain == "*" && (l.Type == "soft" || l.Type == "-") {
			out[l.Item] = l.Value
		}
	}
	return out
}
