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
