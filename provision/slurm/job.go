package slurm

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"time"

	"github.com/gpuform/gpuform/internal/lazyre"
	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/transport"
)

// jobScript prints one job's scontrol -o show job line
// (scripts/job.sh).
//
//go:embed scripts/job.sh
var jobScript string

// jobID is what a Slurm job id looks like (SLURM_JOB_ID; an array task's
// "123_4" too): checked before it reaches scontrol.
var jobID = lazyre.New(`^[0-9]+(_[0-9]+)?$`)

// ValidJobID reports whether id looks like a Slurm job id.
func ValidJobID(id string) bool { return jobID.MatchString(id) }

// JobStart reads when job id started (StartTime=, slurmctld's clock in
// whole seconds, printed in loc's zone: scontrol's own, which is this
// process's when both run here). The epilog gate judges the Xids logged
// from then on.
func JobStart(ctx context.Context, tr transport.Transport, id string, loc *time.Location) (time.Time, error) {
	if !ValidJobID(id) {
		return time.Time{}, fmt.Errorf("job id %q is not a Slurm job id", id)
	}
	res, err := tr.Run(ctx, transport.Command{Script: nodesh.Script(jobScript, []string{id})})
	if err != nil {
		return time.Time{}, fmt.Errorf("read Slurm job %s: %w", id, err)
	}
	if res.ExitCode != 0 {
		msg := strings.TrimSpace(transport.HostText(string(res.Stderr)))
		if i := strings.LastIndex(msg, "\n"); i >= 0 {
			msg = msg[i+1:]
		}
		return time.Time{}, fmt.Errorf("read Slurm job %s on %s: exit status %d: %s", id, tr.Host(), res.ExitCode, msg)
	}
	return parseJobStart(id, string(res.Stdout), loc)
}

// parseJobStart reads StartTime= from scontrol -o show job's line.
func parseJobStart(id, out string, loc *time.Location) (time.Time, error) {
	for _, f := range strings.Fields(out) {
		v, ok := strings.CutPrefix(f, "StartTime=")
		if !ok {
			continue
		}
		t, err := time.ParseInLocation("2006-01-02T15:04:05", v, loc)
		if err != nil {
			return time.Time{}, fmt.Errorf("read Slurm job %s: StartTime=%s is not a time", id, v)
		}
		return t, nil
	}
	return time.Time{}, fmt.Errorf("read Slurm job %s: scontrol show job printed no StartTime=", id)
}
