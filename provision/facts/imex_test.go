package facts

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestParseIMEXStatusCaptures reads both published nvidia-imex-ctl -N
// layouts (testdata/imex/SOURCE.md): the 18-node GB200 rack with its
// Version column, and the older 2-node one without.
func TestParseIMEXStatusCaptures(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		file    string
		nodes   int
		node7   IMEXNode
		version string
	}{
		{"imex-ctl-N-p6e-gb200-18-nodes.txt", 18, IMEXNode{Index: 7, Address: "172.31.51.157", Status: "READY", Version: "570.172"}, "570.172"},
		{"imex-ctl-N-gh200-2-nodes.txt", 2, IMEXNode{}, ""},
	} {
		b, err := os.ReadFile("testdata/imex/" + tt.file)
		if err != nil {
			t.Fatal(err)
		}
		st, err := ParseIMEXStatus(string(b))
		if err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		if len(st.Nodes) != tt.nodes || len(st.Connectivity) != tt.nodes || st.DomainState != "UP" {
			t.Errorf("%s: %d nodes, %d rows, state %q", tt.file, len(st.Nodes), len(st.Connectivity), st.DomainState)
		}
		if tt.nodes > 7 && st.Nodes[7] != tt.node7 {
			t.Errorf("%s: node 7 %+v, want %+v", tt.file, st.Nodes[7], tt.node7)
		}
		if tt.nodes == 2 && (st.Nodes[1].Address != "10.136.206.48" || st.Nodes[1].Version != "") {
			t.Errorf("%s: node 1 %+v", tt.file, st.Nodes[1])
		}
		for i, row := range st.Connectivity {
			for j, c := range row {
				if c != "C" {
					t.Errorf("%s: cell %d→%d %q", tt.file, i, j, c)
				}
			}
		}
	}
}

// TestParseIMEXStatusRefuses: output that is not the tool's whole table
// (a row missing, a node out of order, no domain state, too many nodes)
// is an error, never a partial status.
func TestParseIMEXStatusRefuses(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/imex/imex-ctl-N-gh200-2-nodes.txt")
	if err != nil {
		t.Fatal(err)
	}
	good := string(b)
	many := "Nodes:\n"
	for i := range maxIMEXNodes + 1 {
		many += "Node #" + itoa(i) + " - 10.0.0.1 - READY\n"
	}
	for name, text := range map[string]string{
		"row missing":     strings.Replace(good, "       1        C  C\n", "", 1),
		"node order":      strings.Replace(good, "Node #1 ", "Node #3 ", 1),
		"no domain state": strings.Replace(good, "Domain State: UP\n", "", 1),
		"short row":       strings.Replace(good, "       1        C  C\n", "       1        C\n", 1),
		"too many nodes":  many,
		"nothing":         "nvidia-imex-ctl: connection refused\n",
	} {
		if st, err := ParseIMEXStatus(text); err == nil {
			t.Errorf("%s: parsed %+v", name, st)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
