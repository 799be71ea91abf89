package verify

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the table in CHECKS.md from Checks()")

// checksTable renders Checks() as the table of CHECKS.md.
func checksTable() string {
	var b strings.Builder
	b.WriteString("| id | needs | when emitted | fails when | action |\n| --- | --- | --- | --- | --- |\n")
	for _, d := range Checks() {
		b.WriteString("| `" + d.Pattern() + "` | " + string(d.Needs) + " | " + d.When + " | " + d.Judges + " | " + d.Action + " |\n")
	}
	return b.String()
}

// TestChecksDocumented keeps CHECKS.md and the declared checks in step, as
// TestRuleCatalogue does for lint's docs/rules.md: the table in CHECKS.md
// is Checks() rendered (go test -update rewrites it); the prose around it
// is kept by hand.
func TestChecksDocumented(t *testing.T) {
	b, err := os.ReadFile("CHECKS.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "\n| id |")
	if start < 0 {
		t.Fatal("CHECKS.md has no table starting with \"| id |\"")
	}
	start++
	end := start
	for end < len(doc) && doc[end] == '|' {
		nl := strings.IndexByte(doc[end:], '\n')
		if nl < 0 {
			end = len(doc)
			break
		}
		end += nl + 1
	}
	// A merge can leave a second copy of rows (or conflict markers) after
	// the table, where the table test would not look.
	for _, line := range strings.Split(doc[end:], "\n") {
		if strings.HasPrefix(line, "| `") || strings.HasPrefix(line, "<<<<<<< ") || strings.HasPrefix(line, ">>>>>>> ") {
			t.Errorf("CHECKS.md has a stray table row or conflict marker after the table: %.80s", line)
		}
	}
	want := checksTable()
	if got := doc[start:end]; got != want {
		if *update {
			if err := os.WriteFile("CHECKS.md", []byte(doc[:start]+want+doc[end:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("the table in CHECKS.md is not Checks() (go test -update rewrites it):\n--- CHECKS.md\n%s\n--- Checks()\n%s", got, want)
	}
}

// TestChecksDeclaredOnce requires one declaration per id, each complete.
func TestChecksDeclaredOnce(t *testing.T) {
	seen := map[CheckID]bool{}
	for _, d := range Checks() {
		if seen[d.ID] {
			t.Errorf("%s declared twice", d.ID)
		}
		seen[d.ID] = true
		if d.Needs == "" || d.When == "" || d.Judges == "" || d.Action == "" {
			t.Errorf("%s: needs %q, when %q, judges %q, action %q: every field is required", d.ID, d.Needs, d.When, d.Judges, d.Action)
		}
	}
}

// TestLookupCheck finds the declaration of each kind of emitted id and
// none for ids no check emits.
func TestLookupCheck(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want CheckID
	}{
		{"nvml.facts", CheckNVMLFacts},
		{"nvml.pcie_link[gpu3]", CheckPCIeLink},
		{"dcgm.diag", CheckDCGMDiag},
		{"dcgm.memory_bandwidth", CheckDCGMTest},
		{"nccl.allreduce", CheckNCCL},
		{"host.reachable", CheckReachable},
		{"nvml.pcie_link", ""},     // a per-GPU check always names its GPU
		{"nvml.facts[gpu0]", ""},   // a node-wide check never does
		{"nvml.nvlink[gpux]", ""},  // not a GPU index
		{"nccl.", ""},              // a run has a name
		{"nvml.unknown_check", ""}, // never declared
		{"nic.link[mlx5_3]", CheckNICLink},
		{"nic.pcie_link[mlx5_10]", CheckNICPCIeLink},
		{"nic.link", ""},   // a per-NIC check always names its device
		{"nic.link[]", ""}, // and the name is not empty
		{"nic.mtu[mlx5_0]", ""},
	} {
		t.Run(tc.id, func(t *testing.T) {
			d, ok := LookupCheck(tc.id)
			if ok != (tc.want != "") || d.ID != tc.want {
				t.Errorf("LookupCheck(%q) = %q, %t; want %q", tc.id, d.ID, ok, tc.want)
			}
		})
	}
}

// Pattern is the id as CHECKS.md writes it: "nvml.pcie_link[gpuN]",
// "nccl.<name>".
func (d CheckDef) Pattern() string {
	switch d.Scope {
	case ScopeGPU:
		return string(d.ID) + "[gpuN]"
	case ScopeNIC:
		return string(d.ID) + "[<dev>]"
	case ScopeNamed:
		if d.ID == CheckImageDigest {
			return d.ID.Named("<image>")
		}
		switch d.Needs {
		case NeedDCGM:
			return d.ID.Named("<test>")
		case NeedProbe:
			return d.ID.Named("<resource>")
		case NeedNVML:
			return d.ID.Named("<image>")
		}
		return d.ID.Named("<name>")
	}
	return string(d.ID)
}
