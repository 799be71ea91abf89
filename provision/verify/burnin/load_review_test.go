package burnin

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestLoadShorterThanAsked: a burn-in passes only the load it ran. The
// modelled healthy replay's samples span 4 hours; asked for 6, its load
// ended 2 hours early (a load generator that stops on its own with
// status 0), and burnin.load fails saying so, where before the record
// passed and claimed the 6 hours. Asked for 4 hours it passes.
func TestLoadShorterThanAsked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		asked time.Duration
		want  string
	}{
		{4 * time.Hour, ""},
		{6 * time.Hour, "the sustained load's samples span 4h0m0s of the 6h0m0s asked"},
	} {
		t.Run(tc.asked.String(), func(t *testing.T) {
			t.Parallel()
			tr := replayNode(t, "dcgmi-diag-r4-dcgm2x-blacklist-era-healthy-gcm.txt", "load-4xH100-4h-healthy.modelled.csv", "", false)
			r, err := RunNode(context.Background(), tr, NodeOptions{Duration: time.Second, DCGMTimeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			// The replay's clock is scaled: the load took no time, its
			// samples say 4 hours. What was asked is set as RunNode
			// would have it.
			r.Duration = tc.asked
			fs := Evaluate(r, Limits{})
			var load *Finding
			for i := range fs {
				if fs[i].Check == "burnin.load" {
					load = &fs[i]
				}
			}
			rec := NewRecord(node, t0, t0.Add(tc.asked), tc.asked, fs)
			switch {
			case tc.want == "" && (load != nil || !rec.Passed):
				t.Errorf("a load of the length asked: burnin.load %+v, record passed %v", load, rec.Passed)
			case tc.want != "" && (load == nil || load.Status != StatusFail || !strings.HasPrefix(load.Message, tc.want) || rec.Passed):
				t.Errorf("a load shorter than asked: burnin.load %+v, record passed %v; want a failure %q", load, rec.Passed, tc.want)
			}
		})
	}
}

// TestJudgeInconsistentRecord: a record whose passed flag its findings
// contradict (passed with a failed or not-run finding, or with none) is
// no record of a passed burn-in, whoever wrote it: NewRecord never
// writes one, so it is corrupt, and never valid.
func TestJudgeInconsistentRecord(t *testing.T) {
	t.Parallel()
	fin := t0.Add(4 * time.Hour)
	for name, findings := range map[string][]Finding{
		"a failed finding":  {{Check: "burnin.thermal", Status: StatusPass}, {Check: "burnin.nccl", Status: StatusFail}},
		"a not-run part":    {{Check: "burnin.counters", Status: StatusNotRun}},
		"no findings":       nil,
		"an unknown status": {{Check: "burnin.dcgm", Status: "skipped"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := NewRecord(node, t0, fin, 4*time.Hour, findings)
			r.Passed = true // as a hand-edited or foreign record says
			v := Judge(encode(t, r), true, fin.Add(time.Hour), 0, node)
			if v.OK || v.Reason != ReasonCorrupt {
				t.Errorf("Judge = %v %s %q; want corrupt", v.OK, v.Reason, v.Message)
			}
		})
	}
}
