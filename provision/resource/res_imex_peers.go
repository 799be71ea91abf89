package resource

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/provision/facts"
)

// imexPeersReads declares what imex_peers reads back on a node: the
// peer list, byte-exact.
func imexPeersReads() facts.Reads {
	return facts.Reads{ManagedFiles: []string{IMEXNodesConfig}, ManagedDirs: []string{pendingDir}}
}

// imexPeerPattern is what may be written as one line of nodes_config.cfg:
// an IPv4/IPv6 address or a host name (IMEX resolves names, treating "a
// node config entry as a host name" as its log says,
// kubernetes-sigs/dra-driver-nvidia-gpu#1465).
var imexPeerPattern = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9.\-:]{0,252}$`)

// IMEXPeerOf is the nodes_config.cfg line gpuform writes for host (verify
// judges the node list against it).
func IMEXPeerOf(host string) string { return imexPeer(host) }

// imexPeer is the address a host of the domain is written as: its
// inventory name, or the instance name of a simulated host
// (sim://PROFILE/INSTANCE), which is its host name.
func imexPeer(host string) string {
	if rest, ok := strings.CutPrefix(host, "sim://"); ok {
		if _, inst, ok := strings.Cut(rest, "/"); ok {
			return inst
		}
		return rest
	}
	return host
}

// buildIMEXPeers writes the host's NVLink domain, one tray per line, into
// IMEX's nodes_config.cfg and restarts a running IMEX to read it.
func buildIMEXPeers(in *buildInput) ([]Resource, []string, error) {
	if !in.imexWanted() {
		return nil, nil, nil
	}
	domain := in.n.NVLinkDomainOf(in.f.Host)
	if domain == "" {
		return nil, []string{"imex: the host is in no nvlink_domain block, so gpuform has no peers to write into " + IMEXNodesConfig + " and leaves it alone"}, nil
	}
	var peers []string
	for _, d := range in.n.NVLinkDomains {
		if d.Name != domain {
			continue
		}
		if d.FromFabric {
			return nil, []string{fmt.Sprintf("imex: nvlink_domain %q is read from the NVLink fabric, whose peers one host's plan does not know, so gpuform leaves %s alone; list each rack's hosts in its own nvlink_domain block to have gpuform write it", d.Name, IMEXNodesConfig)}, nil
		}
		for _, h := range d.Hosts {
			p := imexPeer(h)
			if err := check(imexPeerPattern, "IMEX peer", p); err != nil {
				return nil, nil, err
			}
			peers = append(peers, p)
		}
	}
	content := strings.Join(peers, "\n") + "\n"
	return []Resource{&fileResource{
		base:    base{name: IMEXPeers, deps: []string{IMEXPackage}},
		path:    IMEXNodesConfig,
		content: content,
		current: managedFile(IMEXNodesConfig),
		attrs: func(_ *facts.Node, cur string, _ bool) Values {
			return Values{"nvlink_domain": StringVal(domain), "peers": StringVal(strings.Join(strings.Fields(cur), ","))}
		},
		desired: Values{"nvlink_domain": StringVal(domain), "peers": StringVal(strings.Join(peers, ","))},
		// IMEX reads its node list when it starts.
		then: tryRestart(imexService),
	}}, nil, nil
}
