package apply_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/internal/palette"
	"github.com/gpuform/gpuform/provision/apply"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", name, diff)
	}
}

// The recap is a table like Ansible's PLAY RECAP, then Terraform's verdict
// in resources, and the last line counts hosts by outcome, naming only the
// outcomes that occurred.
func TestRenderRecap(t *testing.T) {
	for _, tc := range []struct {
		name string
		rep  apply.Report
		want string // the summary line
	}{{
		name: "one host rebooted",
		rep: apply.Report{Hosts: []apply.HostResult{{Host: "gpu001", Status: apply.Rebooted, StepsRun: 14, StepsPlanned: 14, Elapsed: 7*time.Minute + 3*time.Second,
			Resources: apply.ResourceCounts{Added: 4, Changed: 5}}}},
		want: "Apply complete! Resources: 4 added, 5 changed, 0 destroyed (14 steps run).\nApply finished on 1 host: 1 rebooted.\n",
	}, {
		name: "fleet",
		rep: apply.Report{Hosts: []apply.HostResult{
			{Host: "gpu001", Batch: 1, Status: apply.Succeeded, StepsRun: 3, StepsPlanned: 3, Elapsed: 42 * time.Second, Resources: apply.ResourceCounts{Changed: 2}},
			{Host: "gpu002", Batch: 1, Status: apply.Succeeded, Elapsed: 2 * time.Second},
			{Host: "gpu003", Batch: 1, Status: apply.RebootPending, StepsRun: 12, StepsPlanned: 12, Elapsed: 3*time.Minute + 9*time.Second, Resources: apply.ResourceCounts{Added: 3, Changed: 4, Destroyed: 1}},
			{Host: "gpu004", Batch: 1, Status: apply.Failed, StepsRun: 2, StepsPlanned: 12, Error: "step 3/12 failed: install cuda-drivers-550: exit status 100", Elapsed: 71 * time.Second, Resources: apply.ResourceCounts{Changed: 1}},
			{Host: "gpu005", Batch: 2, Status: apply.Skipped, StepsPlanned: 12, Error: `not started: node "train" exceeded its failure budget (1 failed, max_failures = 0)`},
		}, Stopped: `node "train": 1 hosts failed, more than max_failures = 0; batch 2 and later were not started`},
		want: "Apply failed! Resources: 3 added, 7 changed, 1 destroyed (17 steps run) before it stopped.\nApply finished on 5 hosts: 2 succeeded, 1 reboot pending, 1 failed, 1 skipped.\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			apply.RenderText(&b, &tc.rep, apply.TextOptions{})
			out := b.String()
			if !strings.HasSuffix(out, tc.want) {
				t.Errorf("want the summary %q, got:\n%s", tc.want, out)
			}
			golden(t, "recap."+strings.ReplaceAll(tc.name, " ", "_")+".golden.txt", out)
		})
	}
}

// visible writes the live line's carriage returns and erase-line codes as
// a new line marked <CR>, so that the golden shows each state the line went
// through.
func visible(s string) string {
	return strings.ReplaceAll(s, "\r\x1b[K", "<CR>\n")
}

// On a terminal one line shows hosts done, running and failed and the step
// of the host that has been running longest; a failure stays on its own
// line. Elsewhere each event is a line.
func TestRenderProgress(t *testing.T) {
	events := []apply.Event{
		{Host: "gpu001", Message: "locked"},
		{Host: "gpu002", Message: "locked"},
		{Host: "gpu001", Message: "step 1/3: install cuda-drivers-550"},
		{Host: "gpu002", Message: "step 1/2: write /etc/sysctl.d/90-gpuform.conf"},
		{Host: "gpu002", Message: "failed: step 1/2: exit status 1", Done: true, Status: apply.Failed},
		{Host: "gpu003", Message: "locked"},
		{Host: "gpu001", Message: "step 2/3: hold cuda-drivers-550"},
		{Host: "gpu003", Message: "succeeded", Done: true, Status: apply.Succeeded},
		{Host: "gpu001", Message: "succeeded", Done: true, Status: apply.Succeeded},
	}
	for _, live := range []bool{true, false} {
		name := map[bool]string{true: "live", false: "lines"}[live]
		t.Run(name, func(t *testing.T) {
			clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			var b bytes.Buffer
			pr := apply.NewProgress(&b, apply.ProgressOptions{Live: live, Hosts: 3, Width: 90, Now: func() time.Time {
				clock = clock.Add(10 * time.Second)
				return clock
			}})
			for _, e := range events {
				pr.Event(e)
			}
			pr.Finish()
			out := b.String()
			if live {
				if strings.Contains(out, "\ngpu001: step") || !strings.Contains(out, "gpu002: failed: step 1/2") || !strings.HasSuffix(out, "\r\x1b[K") {
					t.Errorf("live: want no per-step lines, the failure on its own line and the line cleared at the end:\n%q", out)
				}
			} else if strings.Contains(out, "\r") || strings.Count(out, "\n") != len(events) {
				t.Errorf("lines: want one line per event and no live line:\n%q", out)
			}
			golden(t, "progress."+name+".golden.txt", visible(out))
		})
	}
}

// TestRenderRecapColor: with colour on, a failure is painted in the one
// palette's red (as verify's FAIL), the verdict too, and the columns stay
// aligned because only the last column carries colour; off, no escape.
func TestRenderRecapColor(t *testing.T) {
	t.Parallel()
	rep := apply.Report{Hosts: []apply.HostResult{
		{Host: "gpu001", Status: apply.Succeeded, StepsRun: 3, StepsPlanned: 3, Elapsed: time.Second, Resources: apply.ResourceCounts{Added: 1}},
		{Host: "gpu002", Status: apply.Failed, StepsRun: 1, StepsPlanned: 3, Error: "step 2/3 failed", Elapsed: time.Second},
	}}
	var on, off bytes.Buffer
	apply.RenderText(&on, &rep, apply.TextOptions{Color: true})
	apply.RenderText(&off, &rep, apply.TextOptions{})
	if strings.Contains(off.String(), "\x1b[") {
		t.Errorf("colour off wrote escapes:\n%q", off.String())
	}
	red := "\x1b[" + string(palette.Fail) + "m"
	for _, want := range []string{red + "failed: step 2/3 failed\x1b[0m", red + "Apply failed!\x1b[0m"} {
		if !strings.Contains(on.String(), want) {
			t.Errorf("want %q in:\n%q", want, on.String())
		}
	}
	// Stripped of its escapes the coloured recap is the plain one.
	plain := regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(on.String(), "")
	if diff := cmp.Diff(off.String(), plain); diff != "" {
		t.Errorf("coloured recap without its escapes (-plain +coloured):\n%s", diff)
	}
}

// TestRenderProgressWidth: the live line is cut one column short of the
// terminal's width (80, 160, 250 columns: what Streams.Width reads), with
// an ellipsis only when it was longer, so a wide terminal shows the whole
// step.
func TestRenderProgressWidth(t *testing.T) {
	t.Parallel()
	step := "step 3/24: fabric_manager: Install nvidia-fabricmanager-580 580.95.05 and hold it, so that it matches the driver; then enable and start nvidia-fabricmanager.service"
	full := "Applying: 0/1 host done, 1 running, 0 failed; slowest gpu001 (10s): " + step
	for _, tc := range []struct {
		width int
		want  string
	}{
		{80, string([]rune(full)[:78]) + "…"},
		{160, string([]rune(full)[:158]) + "…"},
		{250, full},
		{0, string([]rune(full)[:apply.DefaultWidth-2]) + "…"},
	} {
		t.Run(fmt.Sprint(tc.width), func(t *testing.T) {
			t.Parallel()
			clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			var b bytes.Buffer
			pr := apply.NewProgress(&b, apply.ProgressOptions{Live: true, Hosts: 1, Width: tc.width, Now: func() time.Time {
				clock = clock.Add(10 * time.Second)
				return clock
			}})
			pr.Event(apply.Event{Host: "gpu001", Message: step})
			lines := strings.Split(b.String(), "\r\x1b[K")
			got := lines[len(lines)-1]
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("live line at %d columns (-want +got):\n%s", tc.width, diff)
			}
			if w := max(tc.width, 1); tc.width > 0 && len([]rune(got)) >= w {
				t.Errorf("%d runes fill the %d-column terminal", len([]rune(got)), w)
			}
		})
	}
}
