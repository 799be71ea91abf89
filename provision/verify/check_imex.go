package verify

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/resource"
	"github.com/gpuform/gpuform/spec"
)

// IMEXExpectation is what a host of a node with driver { imex = true }
// must show: nvidia-imex enabled and running, and its node list naming
// every host of the host's NVLink domain (imex.peers).
type IMEXExpectation struct {
	// Domains are the node's NVLink domains with the IMEX peer each host
	// is written as (resource's nodes_config.cfg line).
	Domains []IMEXDomain
}

// IMEXDomain is one NVLink domain: its name, hosts and their peer lines.
type IMEXDomain struct {
	Name  string
	Hosts []string
	Peers []string
	// FromFabric: the block is read from the NVLink fabric, so gpuform
	// writes no node list and has no peer list to judge.
	FromFabric bool
}

// imexExpectation reads the IMEX expectation of node n; nil when the node
// does not ask for IMEX.
func imexExpectation(n *spec.Node) *IMEXExpectation {
	if n.Driver == nil || !n.Driver.IMEX.V {
		return nil
	}
	e := &IMEXExpectation{}
	for _, d := range n.NVLinkDomains {
		dom := IMEXDomain{Name: d.Name, Hosts: d.Hosts, FromFabric: d.FromFabric}
		for _, h := range d.Hosts {
			dom.Peers = append(dom.Peers, resource.IMEXPeerOf(h))
		}
		e.Domains = append(e.Domains, dom)
	}
	return e
}

// checkIMEX judges imex.peers from the probe: the service enabled and
// active, and nodes_config.cfg naming every peer of the host's domain (a
// missing peer fails, naming it; a line that is no host of the domain
// fails too). Without the probe's facts it is an error, never a pass.
func checkIMEX(exp Expectation, extra HostFacts) []CheckResult {
	e := exp.IMEX
	if e == nil {
		return nil
	}
	r := CheckResult{ID: string(CheckIMEXPeers)}
	f := extra.Facts
	if f == nil {
		r.Status, r.Message = StatusError, "no probe facts: could not read IMEX's service and node list"
		return []CheckResult{r}
	}
	var dom *IMEXDomain
	for i := range e.Domains {
		if slices.Contains(e.Domains[i].Hosts, f.Host) {
			dom = &e.Domains[i]
		}
	}
	if dom == nil {
		r.Status, r.Message = StatusSkip, "the host is in no nvlink_domain block: no peers to judge"
		return []CheckResult{r}
	}
	if dom.FromFabric {
		r.Status, r.Message = StatusSkip, fmt.Sprintf("nvlink_domain %q is read from the NVLink fabric: gpuform writes no IMEX node list there and has none to judge", dom.Name)
		return []CheckResult{r}
	}
	r.Expected = fmt.Sprintf("nvidia-imex running with the %d hosts of NVLink domain %q: %s", len(dom.Peers), dom.Name, strings.Join(dom.Peers, ","))
	u := f.Unit("nvidia-imex.service")
	cur, exists := f.ManagedFile(resource.IMEXNodesConfig)
	have := strings.Fields(cur)
	r.Observed = fmt.Sprintf("service %s/%s, peers %s", u.Enabled, u.Active, strings.Join(have, ","))
	var missing, extraPeers []string
	for _, p := range dom.Peers {
		if !slices.Contains(have, p) {
			missing = append(missing, p)
		}
	}
	for _, p := range have {
		if !slices.Contains(dom.Peers, p) {
			extraPeers = append(extraPeers, p)
		}
	}
	var why []string
	service := 0
	if u.Active != "active" {
		why = append(why, "nvidia-imex.service is "+orUnknown(u.Active)+", not active")
		service++
	}
	if u.Enabled != "enabled" {
		why = append(why, "nvidia-imex.service is "+orUnknown(u.Enabled)+", not enabled (it would not start at boot)")
	}
	switch {
	case !exists:
		why = append(why, resource.IMEXNodesConfig+" is missing")
	case len(missing) > 0:
		why = append(why, fmt.Sprintf("IMEX lacks peer %s of NVLink domain %q", strings.Join(missing, ", "), dom.Name))
	}
	if len(extraPeers) > 0 {
		why = append(why, fmt.Sprintf("IMEX lists %s, not a host of NVLink domain %q", strings.Join(extraPeers, ", "), dom.Name))
	}
	if st := f.IMEXStatus; st != nil {
		// IMEX's own view (nvidia-imex-ctl -N): a status, which a
		// measured fabric may override as it does the service's.
		said := imexStatusProblems(st, have)
		why = append(why, said...)
		service += len(said)
		r.Observed += ", " + imexStatusObserved(st)
	}
	if len(why) > 0 {
		r.Status, r.Message = StatusFail, strings.Join(why, "; ")
		if service == len(why) {
			r.Message += imexStatusOnly
		}
	} else {
		r.Status = StatusPass
	}
	return []CheckResult{r}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// imexStatusOnly ends an imex.peers failure that rests on the service's
// state alone (its node list is right): a measured fabric may confirm
// IMEX works after all (confirmIMEX).
const imexStatusOnly = " (the node list is complete)"

// confirmIMEX is confirm before fail for IMEX: an imex.peers failure that
// rests only on the service's state is overridden by a multi-node NVLink
// all_reduce (an nccl_test with network = "mnnvl") that passed on this
// host, since NCCL's multi-node NVLink needs IMEX to import peer memory:
// the state read is stale, the fabric measured works. Both stay shown.
// IMEX health tools have reported a domain unhealthy while it measured
// 843 GB/s (NVIDIA/aicr#2641).
func confirmIMEX(exp Expectation, out []CheckResult) {
	var proof *CheckResult
	for _, n := range exp.NCCL {
		if !n.MultiNode || n.Network != "mnnvl" {
			continue
		}
		for i := range out {
			if out[i].ID == CheckNCCL.Named(n.Name) && out[i].Status == StatusPass {
				proof = &out[i]
			}
		}
	}
	if proof == nil {
		return
	}
	for i := range out {
		r := &out[i]
		if r.ID != string(CheckIMEXPeers) || r.Status != StatusFail || !strings.HasSuffix(r.Message, imexStatusOnly) {
			continue
		}
		r.Status = StatusPass
		r.Message = "IMEX status says " + strings.TrimSuffix(r.Message, imexStatusOnly) + ", but " + proof.ID + " measured the fabric across the domain (" + proof.Observed + "): the status is stale, the fabric works; confirm IMEX's state on the node"
	}
}

// imexStatusProblems judges what nvidia-imex-ctl -N reported: the read
// itself, each node READY, every pair of the connectivity matrix C
// (connected), and the domain UP. Nodes are named by their number and
// address, and by their line of nodes_config.cfg (peers) where the
// counts agree (IMEX numbers the nodes in that file's order).
func imexStatusProblems(st *facts.IMEXStatus, peers []string) []string {
	if st.Error != "" {
		return []string{"IMEX's own status could not be read: " + st.Error}
	}
	name := func(i int) string {
		n := st.Nodes[i]
		if len(peers) == len(st.Nodes) && peers[i] != n.Address {
			return fmt.Sprintf("node #%d (%s, %s)", i, n.Address, peers[i])
		}
		return fmt.Sprintf("node #%d (%s)", i, n.Address)
	}
	var out []string
	for i, n := range st.Nodes {
		if n.Status != "READY" {
			out = append(out, fmt.Sprintf("IMEX reports %s %s, not READY", name(i), n.Status))
		}
	}
	var bad []string
	for i, row := range st.Connectivity {
		for j, c := range row {
			if c == "C" {
				continue
			}
			what := facts.IMEXConnectivityMeaning[c]
			if what == "" {
				what = "state " + c
			}
			bad = append(bad, fmt.Sprintf("%s to %s %s", name(i), name(j), what))
		}
	}
	if len(bad) > 0 {
		more := ""
		if len(bad) > 3 {
			more = fmt.Sprintf(" and %d more pairs", len(bad)-3)
			bad = bad[:3]
		}
		out = append(out, "IMEX connectivity: "+strings.Join(bad, "; ")+more)
	}
	if st.DomainState != "UP" {
		out = append(out, "IMEX domain state "+st.DomainState+", not UP")
	}
	return out
}

// imexStatusObserved sums up nvidia-imex-ctl -N for the check's Observed.
func imexStatusObserved(st *facts.IMEXStatus) string {
	if st.Error != "" {
		return "nvidia-imex-ctl -N unreadable"
	}
	ready, connected, cells := 0, 0, 0
	for _, n := range st.Nodes {
		if n.Status == "READY" {
			ready++
		}
	}
	for _, row := range st.Connectivity {
		for _, c := range row {
			cells++
			if c == "C" {
				connected++
			}
		}
	}
	return fmt.Sprintf("nvidia-imex-ctl -N: %d of %d nodes READY, %d of %d pairs connected, domain %s", ready, len(st.Nodes), connected, cells, st.DomainState)
}
