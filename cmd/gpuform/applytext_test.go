package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// termBuffer stands in for a terminal: Streams.IsTerminal asks it.
type termBuffer struct {
	bytes.Buffer
	term bool
}

func (b *termBuffer) IsTerminal() bool { return b.term }

// TestApplyProgressText: on a terminal apply keeps one live progress line
// (hosts done / running / failed and the step of the slowest host) instead
// of a line per step; -verbose, or output that is not a terminal, prints
// every step. Each ends with the recap table and a summary that names only
// the outcomes that occurred.
func TestApplyProgressText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		term      bool
		args      []string
		live      bool
		stepLines bool
	}{
		{name: "terminal", term: true, live: true},
		{name: "terminal verbose", term: true, args: []string{"-verbose"}, stepLines: true},
		{name: "not a terminal", term: false, stepLines: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := []string{"NO_COLOR=1", "GPUFORM_SIM_STATE=" + t.TempDir()}
			out, errb := &termBuffer{term: tc.term}, &termBuffer{term: tc.term}
			args := append(append([]string{"apply", "-auto-approve"}, tc.args...), "testdata/planapply")
			code := Run(context.Background(), args, Streams{In: strings.NewReader(""), Out: out, Err: errb, Environ: env})
			o, e := out.String(), errb.String()
			if code != ExitOK {
				t.Fatalf("exit %d\n%s\n%s", code, o, e)
			}
			hasLive := strings.Contains(e, "\r\x1b[KApplying: 0/1 host done, 1 running, 0 failed; slowest sim://hgx-h100-stale (")
			hasSteps := strings.Contains(e, "\nsim://hgx-h100-stale: step ") || strings.HasPrefix(e, "sim://hgx-h100-stale: step ")
			if hasLive != tc.live || hasSteps != tc.stepLines {
				t.Errorf("live line %v (want %v), per-step lines %v (want %v); stderr:\n%q", hasLive, tc.live, hasSteps, tc.stepLines, e)
			}
			if tc.live && !strings.HasSuffix(e, "\r\x1b[K") {
				t.Errorf("the live line is not cleared before the recap: %q", e)
			}
			recap := regexp.MustCompile(`\nApply recap:\n  HOST +CHANGED +REBOOTED +FAILED +TIME +RESULT\n  sim://hgx-h100-stale +[1-9][0-9]* +no +no +\d+s +reboot pending: applied; reboot the host`)
			if !recap.MatchString(o) || !strings.HasSuffix(o, "\nApply finished on 1 host: 1 reboot pending.\n") {
				t.Errorf("want the recap table and the summary in stdout:\n%s", o)
			}
		})
	}
}
