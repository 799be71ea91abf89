package slurm

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuform/gpuform/provision/nodesh/nodeshtest"
	"github.com/gpuform/gpuform/provision/transport"
)

func TestJobScriptShellcheck(t *testing.T) {
	nodeshtest.Shellcheck(t, map[string]string{"job.sh": jobScript})
}

// JobStart runs scontrol -o show job ID through job.sh under each shell
// and reads StartTime= in the zone given; a line without it, a value
// that is no time and a scontrol that fails are errors naming the job.
func TestJobStartUnderEachShell(t *testing.T) {
	// A job line as Slurm 22.05's scontrol -o show job prints it
	// (internal/slurmtest's cluster, trimmed).
	const line = "JobId=42 JobName=wrap UserId=root(0) GroupId=root(0) Priority=4294901759 JobState=COMPLETING Reason=None Restarts=0 SubmitTime=2026-12-02T05:20:34 StartTime=2026-12-02T05:20:35 EndTime=2026-12-02T05:20:40 NodeList=gpu001"
	zone := time.FixedZone("CET", 3600)
	for _, sh := range nodeshtest.Shells() {
		t.Run(sh.Name, func(t *testing.T) {
			nodeshtest.Need(t, sh)
			log := filepath.Join(t.TempDir(), "calls")
			bin := t.TempDir()
			stand := "#!/bin/sh\n{ printf scontrol; for a in \"$@\"; do printf ' [%s]' \"$a\"; done; echo; } >>" + transport.Quote(log) + "\n" +
				"case $4 in 42) echo '" + line + "' ;; 43) echo 'JobId=43 JobState=PENDING' ;; 44) echo 'JobId=44 StartTime=Unknown' ;; *) echo 'slurm_load_jobs error: Invalid job id specified' >&2; exit 1 ;; esac\n"
			if err := os.WriteFile(filepath.Join(bin, "scontrol"), []byte(stand), 0o755); err != nil {
				t.Fatal(err)
			}
			tr := shellTransport{t, sh, bin}
			ctx := context.Background()
			got, err := JobStart(ctx, tr, "42", zone)
			if want := time.Date(2026, 12, 2, 4, 20, 35, 0, time.UTC); err != nil || !got.Equal(want) {
				t.Errorf("JobStart(42) = %s, %v; want %s", got, err, want)
			}
			for id, want := range map[string]string{
				"43":     "read Slurm job 43: scontrol show job printed no StartTime=",
				"44":     "read Slurm job 44: StartTime=Unknown is not a time",
				"45":     "read Slurm job 45 on gpu001: exit status 1: slurm_load_jobs error: Invalid job id specified",
				"4;boot": `job id "4;boot" is not a Slurm job id`,
			} {
				if _, err := JobStart(ctx, tr, id, zone); err == nil || err.Error() != want {
					t.Errorf("JobStart(%s): %v; want %q", id, err, want)
				}
			}
			b, _ := os.ReadFile(log)
			calls := strings.Split(strings.TrimSpace(string(b)), "\n")
			slices.Sort(calls)
			if d := cmp.Diff([]string{"scontrol [-o] [show] [job] [42]", "scontrol [-o] [show] [job] [43]", "scontrol [-o] [show] [job] [44]", "scontrol [-o] [show] [job] [45]"}, calls); d != "" {
				t.Errorf("scontrol's arguments (-want +got):\n%s", d)
			}
		})
	}
}
