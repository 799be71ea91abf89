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
// document with the shared format_version and the summary the text ends
// with, so that a pipeline reads the totals instead of counting hosts.
func RenderJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		*Report
		Summary Summary `json:"summary"`
	}{rep, rep.Summary()})
}

// Summary is the count of hosts per status, as apply's last text line.
type Summary struct {
	// Hosts is how many hosts the apply covered.
	Hosts int `json:"hosts"`
	// Succeeded, RebootPending, Rebooted, Failed and Skipped count the
	// hosts with that status.
	Succeeded     int `json:"succeeded"`
	RebootPending int `json:"reboot_pending"`
	Rebooted      int `json:"rebooted"`
	Failed        int `json:"failed"`
	Skipped       int `json:"skipped"`
	// Converged is true when every host converged: apply exits 0 then.
	Converged bool `json:"converged"`
}

// Summary counts the report's hosts per status.
func (r *Report) Summary() Summary {
	return Summary{Hosts: len(r.Hosts), Succeeded: r.Count(Succeeded), RebootPending: r.Count(RebootPending),
		Rebooted: r.Count(Rebooted), Failed: r.Count(Failed), Skipped: r.Count(Skipped), Converged: r.Converged()}
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
