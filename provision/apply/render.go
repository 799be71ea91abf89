package apply

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gpuform/gpuform/provision/transport"
)

// RenderJSON writes the report as `apply -json` prints it: one indented
// document with the shared format_version.
func RenderJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// RenderText writes each host's result and the totals, as apply prints them
// after its per-step lines.
func RenderText(w io.Writer, rep *Report) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, h := range rep.Hosts {
		detail := ""
		switch {
		case h.Error != "":
			detail = h.Error
		case h.Status == RebootPending && strings.HasPrefix(h.Slurm, "reboot through Slurm"):
			detail = "applied; " + h.Slurm
		case h.Slurm != "" && h.StepsRun == 0:
			detail = "Slurm: " + h.Slurm
		case h.Status == RebootPending:
			detail = "applied; reboot the host (or set rollout { reboot = \"allow\" }) to finish"
		case h.StepsRun > 0:
			detail = fmt.Sprintf("%d %s", h.StepsRun, map[bool]string{true: "step", false: "steps"}[h.StepsRun == 1])
			if h.Slurm != "" {
				detail += "; Slurm: " + h.Slurm
			}
		default:
			detail = "no changes"
		}
		fmt.Fprintf(tw, "  %s\tbatch %d\t%s\t%s\n", h.Host, h.Batch, h.Status, transport.HostText(detail))
	}
	tw.Flush()
	if rep.Stopped != "" {
		fmt.Fprintf(w, "\nStopped early: %s.\n", rep.Stopped)
	}
	fmt.Fprintf(w, "\nApply finished: %d succeeded, %d reboot pending, %d rebooted, %d failed, %d skipped.\n",
		rep.Count(Succeeded), rep.Count(RebootPending), rep.Count(Rebooted), rep.Count(Failed), rep.Count(Skipped))
}
