package lint

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/internal/cmdline"
	"github.com/gpuform/gpuform/spec"
)

// ncclMultiNodeHostsRule declares nccl_multi_node_hosts.
func ncclMultiNodeHostsRule() Rule {
	return Rule{
		Name:     "nccl_multi_node_hosts",
		Severity: Warning,
		Summary:  "A multi-node nccl_test chooses hosts other than its node block's: hosts of the group do not take part in the run verify judges them on.",
		Check:    checkNCCLMultiNodeHosts,
	}
}

// shortHost is the name a launcher's host list would carry for an
// inventory host: the last path element of a sim:// address, without a
// user@ or :port.
func shortHost(name string) string {
	if _, rest, ok := strings.Cut(name, "://"); ok {
		name = path.Base(rest)
	}
	if _, h, ok := strings.Cut(name, "@"); ok {
		name = h
	}
	name, _, _ = strings.Cut(name, ":")
	return name
}

func checkNCCLMultiNodeHosts(ctx *Context) {
	for _, n := range ctx.Nodes() {
		if n.Verify == nil {
			continue
		}
		for _, t := range n.Verify.NCCLTests {
			if t == nil || !t.Command.Set || (t.MultiNode.Set && !t.MultiNode.V) {
				continue
			}
			cmd := t.Command.V
			if opt, value, ok := cmdline.HostList(cmd); ok {
				reportOwnHosts(ctx, n, t, opt, value)
				continue
			}
			if t.MultiNode.Set && cmdline.Launcher(cmd) == "" {
				ctx.Report(t.MultiNode.Range,
					fmt.Sprintf("%s: nccl_test %q is multi-node but starts no launcher gpuform can give the group's hosts to", nodeRef(n), t.Name),
					fmt.Sprintf("verify runs %q once, as written, from the group's first host, and cannot pass it the node block's %d host(s) as it does to mpirun (-H) and srun (-w): whatever the command starts chooses its own hosts. Each host is then judged on the run's rank lines, and a host that is not in them is reported not run. Start the test with mpirun or srun and no host list, so that every host of the group takes part.", cmd, len(n.Hosts)))
			}
		}
	}
}

// reportOwnHosts reports a multi-node command with its own host list (which
// validate refuses) against the node block's hosts: which hosts of the
// group it leaves out and which it names that are not in the group.
func reportOwnHosts(ctx *Context, n *spec.Node, t *spec.NCCLTest, opt, value string) {
	var group []string
	for _, h := range n.Hosts {
		group = append(group, shortHost(h.Name))
	}
	if cmdline.IsHostFile(opt) {
		ctx.Report(t.Command.Range,
			fmt.Sprintf("%s: nccl_test %q reads its hosts from %s, not from the node block's %d host(s)", nodeRef(n), t.Name, value, len(group)),
			fmt.Sprintf("A host of the node block that is not in %s would not take part in the run, yet verify judges every host of the group on it. Remove %s %s: verify passes the node block's hosts to %s.", value, opt, value, cmdline.Launcher(t.Command.V)))
		return
	}
	var named []string
	for _, h := range strings.Split(value, ",") {
		h, _, _ = strings.Cut(strings.TrimSpace(h), ":")
		if h != "" && !slices.Contains(named, h) {
			named = append(named, h)
		}
	}
	if strings.ContainsAny(value, "[]") {
		if hs, err := spec.ExpandHostPattern(value); err == nil {
			named = hs
		}
	}
	var left, outside []string
	for _, g := range group {
		if !slices.Contains(named, g) {
			left = append(left, g)
		}
	}
	for _, h := range named {
		if !slices.Contains(group, h) {
			outside = append(outside, h)
		}
	}
	var what []string
	if len(left) > 0 {
		what = append(what, fmt.Sprintf("%s of the node block would not take part", strings.Join(left, ", ")))
	}
	if len(outside) > 0 {
		what = append(what, fmt.Sprintf("%s %s not in the node block", strings.Join(outside, ", "), map[bool]string{true: "is", false: "are"}[len(outside) == 1]))
	}
	if len(what) == 0 {
		what = append(what, "it names the node block's hosts again, which verify does itself")
	}
	ctx.Report(t.Command.Range,
		fmt.Sprintf("%s: nccl_test %q names its own hosts (%s %s): %s", nodeRef(n), t.Name, opt, strings.Join(named, ","), strings.Join(what, "; ")),
		fmt.Sprintf("A multi-node test runs on the hosts of its node block (%s): verify passes them to %s and judges the run on every one of them, so a host the command leaves out would be judged on a run it was not in. Remove %s and list the hosts in the node block.", strings.Join(group, ", "), cmdline.Launcher(t.Command.V), opt))
}
