package lint

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/spec"
)

// duplicateHostRule declares duplicate_host.
func duplicateHostRule() Rule {
	return Rule{
		Name:     "duplicate_host",
		Severity: Error,
		Summary:  "The same host is the target of two nodes (or listed twice in one).",
		Check:    checkDuplicateHost,
	}
}

type hostSeen struct {
	node string
	rng  hcl.Range
}

func checkDuplicateHost(ctx *Context) {
	first := map[string]hostSeen{}
	// One finding per written host expression and earlier node, so a range
	// like gpu[001-032] shared by two nodes is one finding, not 32.
	type key struct {
		rng  hcl.Range
		prev string
	}
	groups := map[key][]string{}
	var order []key
	for _, n := range ctx.Nodes() {
		for _, h := range n.Hosts {
			if prev, ok := first[hostKey(h)]; ok {
				k := key{h.Range, prev.node}
				if h.Range.Filename == "" {
					k.rng = n.HostsRange
				}
				if _, seen := groups[k]; !seen {
					order = append(order, k)
				}
				groups[k] = append(groups[k], h.Name)
				continue
			}
			first[hostKey(h)] = hostSeen{node: n.Name, rng: h.Range}
		}
	}
	for _, k := range order {
		hosts := groups[k]
		ctx.Report(k.rng,
			fmt.Sprintf("%s also targeted by node %q", hostList(hosts), k.prev),
			"Two node blocks would both converge the same machine to different wishes, and each apply undoes the other. Every host belongs to exactly one node; remove it from one of them (split the inventory if needed).")
	}
}

// hostKey is the machine a host entry reaches: host names compare without
// case (DNS does), without a login user, and with SSH's default port
// written out, so GPU001 and gpu001, or gpu002:22 and gpu002, are one host.
// sim:// and local:// addresses compare as written, in lower case.
func hostKey(h spec.Host) string {
	name := h.Name
	if strings.Contains(name, "://") {
		return strings.ToLower(name)
	}
	if i := strings.LastIndex(name, "@"); i >= 0 {
		name = name[i+1:]
	}
	port := h.Port
	if host, p, err := net.SplitHostPort(name); err == nil {
		if n, err := strconv.Atoi(p); err == nil {
			name, port = host, n
		}
	}
	if port == 0 {
		port = 22
	}
	name = strings.TrimSuffix(strings.Trim(name, "[]"), ".")
	return net.JoinHostPort(strings.ToLower(name), strconv.Itoa(port))
}
