package facts

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// IMEX's own view of its domain, `nvidia-imex-ctl -N`, read only when the
// controller asks (Options.IMEXStatus: verify of a node with imex = true):
// it asks the local IMEX daemon, which asks its peers, so it is bounded
// by timeout(1) on the node and by maxIMEXNodes here.

// IMEXStatusCommand is the cmd record of the nvidia-imex-ctl -N read.
const IMEXStatusCommand = "nvidia-imex-ctl-N"

// maxIMEXNodes bounds the nodes read: an NVL72 rack is 18 trays; IMEX
// domains are at most a few racks.
const maxIMEXNodes = 1024

// IMEXNode is one node line of nvidia-imex-ctl -N.
type IMEXNode struct {
	// Index is the node's number ("Node #7"): its line in
	// nodes_config.cfg, from 0.
	Index int `json:"index"`
	// Address is the node's address as IMEX prints it (its IP, or the
	// host name with -H).
	Address string `json:"address"`
	// Status is the node's state ("READY").
	Status string `json:"status"`
	// Version is the node's IMEX version where printed ("570.172").
	Version string `json:"version,omitempty"`
}

// IMEXStatus is what nvidia-imex-ctl -N reported.
type IMEXStatus struct {
	// Nodes are the node lines in order.
	Nodes []IMEXNode `json:"nodes"`
	// Connectivity is the From\To matrix: Connectivity[i][j] is the
	// legend's letter for node i's connection to node j ("C" connected).
	Connectivity [][]string `json:"connectivity"`
	// DomainState is "Domain State" ("UP").
	DomainState string `json:"domain_state"`
	// Error says why the status could not be read (the tool missing,
	// failing or timing out, output that is not its); the rest is empty.
	Error string `json:"error,omitempty"`
}

// IMEXConnectivityMeaning is the legend of nvidia-imex-ctl -N's matrix,
// as the tool prints it.
var IMEXConnectivityMeaning = map[string]string{
	"I":   "invalid (not reachable)",
	"N":   "never connected",
	"R":   "recovering (connection lost)",
	"D":   "disconnected",
	"A":   "authenticating",
	"!V!": "version mismatch",
	"!M!": "node map mismatch",
	"C":   "connected",
}

// ParseIMEXStatus reads nvidia-imex-ctl -N's text: the node lines, the
// connectivity matrix and the domain state; the legend and time stamp are
// skipped. A matrix whose size is not the node count, a row out of order,
// no node, or no domain state is an error: the text is not what the tool
// prints whole.
func ParseIMEXStatus(text string) (*IMEXStatus, error) {
	st := &IMEXStatus{Nodes: []IMEXNode{}, Connectivity: [][]string{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 64*1024)
	line := 0
	matrix := false
	cols := 0
	for sc.Scan() {
		line++
		raw := strings.TrimRight(sc.Text(), " \t\r")
		t := strings.TrimSpace(raw)
		switch {
		case t == "":
			continue
		case strings.HasPrefix(t, "Node #"):
			parts := strings.Split(t, " - ")
			if len(parts) < 3 {
				return nil, fmt.Errorf("line %d: node line %q is not \"Node #N - ADDRESS - STATUS\"", line, t)
			}
			idx, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(parts[0], "Node #")))
			if err != nil || idx != len(st.Nodes) {
				return nil, fmt.Errorf("line %d: node number %q out of order", line, strings.TrimSpace(parts[0]))
			}
			if len(st.Nodes) >= maxIMEXNodes {
				return nil, fmt.Errorf("more than %d IMEX nodes", maxIMEXNodes)
			}
			n := IMEXNode{Index: idx, Address: strings.TrimSpace(parts[1]), Status: strings.TrimSpace(parts[2])}
			for _, p := range parts[3:] {
				if v, ok := strings.CutPrefix(strings.TrimSpace(p), "Version:"); ok {
					n.Version = strings.TrimSpace(v)
				}
			}
			st.Nodes = append(st.Nodes, n)
		case strings.HasPrefix(t, `Nodes From\To`):
			matrix = true
			cols = len(strings.Fields(strings.TrimPrefix(t, `Nodes From\To`)))
			if cols != len(st.Nodes) {
				return nil, fmt.Errorf("line %d: the connectivity matrix has %d columns for %d nodes", line, cols, len(st.Nodes))
			}
		case strings.HasPrefix(t, "Domain State:"):
			st.DomainState = strings.TrimSpace(strings.TrimPrefix(t, "Domain State:"))
			matrix = false
		case matrix:
			f := strings.Fields(t)
			row, err := strconv.Atoi(f[0])
			if err != nil || row != len(st.Connectivity) || len(f)-1 != cols {
				return nil, fmt.Errorf("line %d: connectivity row %q is not row %d of %d cells", line, t, len(st.Connectivity), cols)
			}
			st.Connectivity = append(st.Connectivity, f[1:])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	switch {
	case len(st.Nodes) == 0:
		return nil, fmt.Errorf("no node lines")
	case len(st.Connectivity) != len(st.Nodes):
		return nil, fmt.Errorf("the connectivity matrix has %d rows for %d nodes", len(st.Connectivity), len(st.Nodes))
	case st.DomainState == "":
		return nil, fmt.Errorf("no Domain State line")
	}
	return st, nil
}

// imexStatus reads the nvidia-imex-ctl -N record, when the probe was
// asked for it.
func (p *interpreter) imexStatus() {
	c, ok := p.raw.cmds[IMEXStatusCommand]
	if !ok {
		return
	}
	if c.rc != 0 {
		p.n.IMEXStatus = &IMEXStatus{Error: fmt.Sprintf("nvidia-imex-ctl -N exited %d: %s", c.rc, firstLineOf(c.out))}
		if c.rc == 124 {
			p.n.IMEXStatus.Error = "nvidia-imex-ctl -N did not answer within 20 s (timeout)"
		}
		return
	}
	st, err := ParseIMEXStatus(c.out)
	if err != nil {
		p.n.IMEXStatus = &IMEXStatus{Error: "nvidia-imex-ctl -N: " + err.Error()}
		return
	}
	p.n.IMEXStatus = st
}
