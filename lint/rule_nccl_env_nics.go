package lint

import (
	"fmt"
	"strings"
)

// ncclEnvNICsRule declares nccl_env_nics.
func ncclEnvNICsRule() Rule {
	return Rule{
		Name:     "nccl_env_nics",
		Severity: Error,
		Summary:  "NCCL_IB_HCA or NCCL_SOCKET_IFNAME does not match the declared NICs.",
		Check:    checkNCCLEnvNICs,
	}
}

// ncclDeviceList parses an NCCL device filter (NCCL_IB_HCA,
// NCCL_SOCKET_IFNAME): comma-separated names, optional ":port", a leading
// "^" excludes, a leading "=" asks for exact names instead of prefixes
// (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html).
func ncclDeviceList(s string) (names []string, exclude, exact bool) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "^") {
		exclude, s = true, s[1:]
	}
	if strings.HasPrefix(s, "=") {
		exact, s = true, s[1:]
	}
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if i := strings.IndexByte(p, ':'); i >= 0 {
			p = p[:i]
		}
		if p != "" {
			names = append(names, p)
		}
	}
	return names, exclude, exact
}

func deviceMatches(pattern, name string, exact bool) bool {
	if exact {
		return pattern == name
	}
	return strings.HasPrefix(name, pattern)
}

func checkNCCLEnvNICs(ctx *Context) {
	for _, n := range ctx.Nodes() {
		a := n.Affinity
		if a == nil || n.Hardware == nil {
			continue
		}
		if len(n.Hardware.NICs) == 0 {
			// Nothing to check the names against: say so rather than pass
			// silently (the GH200 module, for one, takes its NICs as input).
			for _, item := range a.NCCLIBHCA {
				ctx.ReportAs(Warning, item.Range,
					fmt.Sprintf("%s: NCCL_IB_HCA names %q, but the hardware profile lists no NICs", nodeRef(n), item.V),
					"gpuform cannot tell whether this HCA exists: a name that matches nothing makes NCCL fall back to TCP sockets without an error. Declare the node's NICs in its hardware (the gpuform/gh200 module takes them as the nics input).")
				break
			}
			continue
		}
		var included []string
		var exact, restrictive bool
		for _, item := range a.NCCLIBHCA {
			names, excl, ex := ncclDeviceList(item.V)
			if excl {
				continue
			}
			restrictive, exact = true, ex
			for _, name := range names {
				included = append(included, name)
				matched, rdma := false, false
				for _, nic := range n.Hardware.NICs {
					if deviceMatches(name, nic.Name, ex) {
						matched, rdma = true, rdma || nic.RDMA
					}
				}
				switch {
				case !matched:
					ctx.Report(item.Range,
						fmt.Sprintf("%s: NCCL_IB_HCA names %q, which matches no NIC in the hardware profile", nodeRef(n), name),
						fmt.Sprintf("%s. NCCL finds no matching HCA and silently falls back to TCP sockets, a 10x or larger slowdown across nodes. Name RDMA devices as listed by ibv_devices.", nicNames(n.Hardware)))
				case !rdma:
					ctx.Report(item.Range,
						fmt.Sprintf("%s: NCCL_IB_HCA names %q, which is not an RDMA NIC", nodeRef(n), name),
						"NCCL_IB_HCA selects InfiniBand/RoCE HCAs; a plain Ethernet port is never used by the IB transport. Remove it or mark the NIC rdma in the hardware profile if it is one.")
				}
			}
		}
		if restrictive {
			for _, gi := range sortedGPUNIC(a) {
				nic := a.GPUNIC[gi]
				hw, ok := n.Hardware.NIC(nic.V)
				if !ok || !hw.RDMA {
					continue
				}
				covered := false
				for _, p := range included {
					if deviceMatches(p, hw.Name, exact) {
						covered = true
					}
				}
				if !covered {
					ctx.ReportAs(Warning, nic.Range,
						fmt.Sprintf("%s: GPU %d is paired with %s, which NCCL_IB_HCA leaves out", nodeRef(n), gi, hw.Name),
						"NCCL only uses the HCAs NCCL_IB_HCA lists, so this pairing is never used. Add the NIC to nccl_ib_hca or drop nccl_ib_hca and let nccl_env derive it.")
				}
			}
		}
		if a.NCCLSocketIfname.Set {
			names, excl, ex := ncclDeviceList(a.NCCLSocketIfname.V)
			if excl {
				continue
			}
			for _, name := range names {
				matched := false
				for _, nic := range n.Hardware.NICs {
					if deviceMatches(name, nic.Netdev, ex) || deviceMatches(name, nic.Name, ex) {
						matched = true
					}
				}
				if !matched {
					ctx.Report(a.NCCLSocketIfname.Range,
						fmt.Sprintf("%s: NCCL_SOCKET_IFNAME %q matches no network interface in the hardware profile", nodeRef(n), name),
						fmt.Sprintf("%s. NCCL then finds no interface for bootstrap and fails at init (\"no socket interface found\"). Use a prefix of the netdev names (e.g. \"ens\" or \"=ib0\").", nicNames(n.Hardware)))
				}
			}
		}
	}
}
