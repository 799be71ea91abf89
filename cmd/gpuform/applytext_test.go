package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// termBuffer stands in for a terminal: Streams.IsTerminal and
// Streams.Width ask it (width 0: not known).
type termBuffer struct {
	bytes.Buffer
	term  bool
	width int
}

func (b *termBuffer) IsTerminal() bool { return b.term }

func (b *termBuffer) TermWidth() int { return b.width }

// TestApplyProgressText: on a terminal apply keeps one live progress line
// (hosts done / running / failed and the step of the slowest host) instead
// of a line per step; -verbose, or output that is not a terminal, prints
// every step. The live line fits the terminal's width (250 columns: not
// cut at 100 any more), colour follows NO_COLOR. Each ends
// with the recap table, Terraform's verdict in the plan's units (the
// resources the plan counted, the steps beside them) and a summary that
// names only the outcomes that occurred.
func TestApplyProgressText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		term      bool
		width     int
		color     bool
		args      []string
		live      bool
		stepLines bool
	}{
		// 80 and 160 columns are provision/apply's TestRenderProgressWidth;
		// here the width and colour reach the view through Streams.
		{name: "terminal", term: true, width: 250, color: true, live: true},
		{name: "terminal verbose NO_COLOR", term: true, width: 80, args: []string{"-verbose"}, stepLines: true},
		{name: "not a terminal", term: false, stepLines: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := []string{"GPUFORM_SIM_STATE=" + t.TempDir()}
			if !tc.color {
				env = append(env, "NO_COLOR=1")
			}
			out, errb := &termBuffer{term: tc.term, width: tc.width}, &termBuffer{term: tc.term, width: tc.width}
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
			if tc.live {
				// Every state of the live line fits the terminal, one
				// column short; the wide one is not cut at 100 columns.
				longest := 0
				for _, seg := range strings.Split(e, "\r\x1b[K") {
					line, _, _ := strings.Cut(seg, "\n")
					longest = max(longest, len([]rune(line)))
				}
				if longest > tc.width-1 || tc.width > 200 && longest <= 100 {
					t.Errorf("longest live line %d columns on a %d-column terminal:\n%q", longest, tc.width, e)
				}
			}
			if hasColor := strings.Contains(o, "\x1b["); hasColor != tc.color {
				t.Errorf("colour %v in stdout, want %v:\n%q", hasColor, tc.color, o)
			}
			o = regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(o, "")
			recap := regexp.MustCompile(`\nApply recap:\n  HOST +ADDED +CHANGED +DESTROYED +STEPS +REBOOTED +FAILED +TIME +RESULT\n  sim://hgx-h100-stale +(\d+) +(\d+) +(\d+) +([1-9][0-9]*)/([1-9][0-9]*) +no +no +\d+s +reboot pending: applied; reboot the host`)
			m := recap.FindStringSubmatch(o)
			if m == nil || !strings.HasSuffix(o, "\nApply finished on 1 host: 1 reboot pending.\n") {
				t.Fatalf("want the recap table and the summary in stdout:\n%s", o)
			}
			if m[4] != m[5] {
				t.Errorf("%s of %s steps ran", m[4], m[5])
			}
			// The verdict counts what the plan counted, in its units.
			planned := regexp.MustCompile(`Plan: (\d+) to add, (\d+) to change, (\d+) to destroy\.`).FindStringSubmatch(o)
			if planned == nil {
				t.Fatalf("no plan summary in stdout:\n%s", o)
			}
			want := "Apply complete! Resources: " + planned[1] + " added, " + planned[2] + " changed, " + planned[3] + " destroyed (" + m[4] + " steps run)."
			if !strings.Contains(o, "\n"+want+"\n") || m[1] != planned[1] || m[2] != planned[2] || m[3] != planned[3] {
				t.Errorf("want %q and the row's counts %v to match the plan's %v:\n%s", want, m[1:4], planned[1:], o)
			}
		})
	}
}
