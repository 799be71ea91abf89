package verify

import (
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/outlier"
	"github.com/gpuform/gpuform/provision/verify/isolate"
)

func TestIsolationCheck(t *testing.T) {
	pair := func(round int, a, b string, pass bool, bw float64) isolate.Pair {
		return isolate.Pair{Round: round, Hosts: [2]string{a, b}, Outcome: isolate.Outcome{Ran: true, Pass: pass, BusBW: bw, Floor: 120}}
	}
	named := isolate.Result{
		Pairs:    []isolate.Pair{pair(1, "n1", "n2", true, 155.56), pair(1, "n3", "n4", false, 77.78), pair(2, "n3", "n1", true, 155.56), pair(2, "n4", "n2", false, 77.78)},
		Culprits: []isolate.Named{{Host: "n4", Partners: []string{"n3", "n2"}, Reason: "failed with every partner (n3, n2), each of which passed with another node"}},
		Complete: true,
	}
	straggler := isolate.Result{
		Pairs:      []isolate.Pair{pair(1, "n1", "n2", true, 155), pair(1, "n3", "n4", true, 124), pair(2, "n4", "n1", true, 124), pair(2, "n3", "n2", true, 155)},
		Stragglers: []outlier.Straggler{{Host: "n4", Pairs: 2, Median: 139.5, BestPair: 124}},
		Complete:   true,
	}
	incomplete := isolate.Result{Pairs: []isolate.Pair{pair(1, "n1", "n2", false, 50), pair(1, "n3", "n4", false, 50)}, Incomplete: "no pair passed"}
	tests := map[string]struct {
		res            isolate.Result
		host           string
		groupFailed    bool
		stragglersFail bool
		status         Status
		text           string
	}{
		"the named node":          {res: named, host: "n4", groupFailed: true, status: StatusFail, text: "failed with n3 (77.78 GB/s), n2 (77.78 GB/s)"},
		"its first partner":       {res: named, host: "n3", groupFailed: true, status: StatusPass, text: "passed with n1 (155.56 GB/s)"},
		"a good node":             {res: named, host: "n1", groupFailed: true, status: StatusPass, text: "passed with n2 (155.56 GB/s), n3 (155.56 GB/s)"},
		"a straggler warns":       {res: straggler, host: "n4", status: StatusPass, text: "straggler: slow with every partner"},
		"a straggler fails":       {res: straggler, host: "n4", stragglersFail: true, status: StatusFail, text: "straggler"},
		"undecided, group failed": {res: incomplete, host: "n2", groupFailed: true, status: StatusError, text: "isolation incomplete: no pair passed"},
		"undecided, group passed": {res: incomplete, host: "n2", status: StatusSkip, text: "isolation incomplete: no pair passed"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := IsolationCheck("fleet", tc.host, tc.res, tc.groupFailed, tc.stragglersFail)
			if r.ID != "nccl_isolation.fleet" || r.Status != tc.status || !strings.Contains(r.Observed+" "+r.Message, tc.text) {
				t.Errorf("%+v; want %s with %q", r, tc.status, tc.text)
			}
			if _, ok := LookupCheck(r.ID); !ok {
				t.Errorf("%s is not declared in Checks()", r.ID)
			}
		})
	}
}
