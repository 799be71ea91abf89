package report

import (
	"fmt"
	"time"

	"github.com/gpuform/gpuform/internal/palette"

	"github.com/gpuform/gpuform/provision/outlier"
	"github.com/gpuform/gpuform/provision/transport"
	"github.com/gpuform/gpuform/provision/verify/isolate"
)

// Isolation is the pairwise isolation of one node group's multi-node test
// (verify -tier fleet): its pairs — the pair matrix — and the nodes they
// name.
type Isolation struct {
	// Node is the spec's node block (the group).
	Node string `json:"node"`
	// Test is the nccl_test label.
	Test string `json:"test"`
	// Mode is verify { isolation }: "on_failure" or "always".
	Mode string `json:"mode"`
	// Trigger says why the pairs ran: the group run's failure, or the mode.
	Trigger string `json:"trigger"`
	// Hosts are the group's hosts in pairing order.
	Hosts []string `json:"hosts"`
	// Budget is the time the group run and its pairs had together.
	Budget time.Duration `json:"budget_ns"`
	// Duration is how long the pairs took.
	Duration time.Duration `json:"duration_ns"`
	isolate.Result
}

// Outlier is a warning-class finding: a device (or node) worse than its
// peers' median by more than the margin while passing its floors. It
// does not fail verify; `verify { outliers = "fail" }` turns findings into
// failed checks instead.
type Outlier struct {
	outlier.Finding
	// Margin is the margin applied, a fraction (0.1 = 10 %).
	Margin float64 `json:"margin"`
}

// writeFleet renders the isolation and outlier sections of the text
// report, between the hosts and the summary line.
func (p *printer) writeFleet(d *Document) {
	for _, iso := range d.Isolation {
		p.line(p.paint(palette.Bold, fmt.Sprintf("Pairwise isolation of node %q, nccl_test %q", iso.Node, iso.Test)) + " (" + transport.HostText(iso.Trigger) + ")")
		width := len("pair")
		for _, pr := range iso.Pairs {
			width = max(width, len(pairName(pr)))
		}
		p.line(fmt.Sprintf("  %-5s  %-*s  %10s  %10s  %s", "round", width, "pair", "busbw GB/s", "floor GB/s", "result"))
		for _, pr := range iso.Pairs {
			bw, floor := "-", "-"
			if pr.BusBW > 0 {
				bw = fmt.Sprintf("%.2f", pr.BusBW)
			}
			if pr.Floor > 0 {
				floor = fmt.Sprintf("%.2f", pr.Floor)
			}
			var res string
			switch {
			case !pr.Ran:
				res = p.paint(palette.Caution, "not run: ") + transport.HostText(pr.Message)
			case pr.Pass && pr.Slow:
				res = p.paint(palette.Caution, "pass, slow")
			case pr.Pass:
				res = p.paint(palette.Pass, "pass")
			default:
				res = p.paint(palette.Fail, "FAIL")
			}
			p.line(fmt.Sprintf("  %-5d  %-*s  %10s  %10s  %s", pr.Round, width, pairName(pr), bw, floor, res))
		}
		for _, c := range iso.Culprits {
			p.line("  " + p.paint(palette.Fail, "Bad node: ") + transport.HostText(c.Host) + ": " + transport.HostText(c.Reason))
		}
		for _, s := range iso.Stragglers {
			p.line("  " + p.paint(palette.Warn, "Straggler: ") + transport.HostText(s.Host) + fmt.Sprintf(": slow with all %d partners (best pair %.2f GB/s, median of the pairs %.2f GB/s)", s.Pairs, s.BestPair, s.Median))
		}
		if !iso.Complete {
			p.line("  " + p.paint(palette.Warn, "Isolation incomplete: ") + transport.HostText(iso.Incomplete))
		} else if len(iso.Culprits) == 0 {
			p.line("  " + p.paint(palette.Pass, "No bad node: every node passed with a partner."))
		}
		rounds := 0
		for _, pr := range iso.Pairs {
			rounds = max(rounds, pr.Round)
		}
		p.line(fmt.Sprintf("  %d pair(s) in %d round(s), %s of a %s budget.", len(iso.Pairs), rounds, iso.Duration.Round(time.Millisecond), iso.Budget.Round(time.Second)))
		p.line("")
	}
	if len(d.Outliers) > 0 {
		p.line(p.paint(palette.Warn, "Warning: ") + p.paint(palette.Bold, "devices worse than their peers") + fmt.Sprintf(" (more than %.0f%% from the median of the same model; they pass their floors)", 100*d.Outliers[0].Margin))
		for _, o := range d.Outliers {
			dir := "below"
			if !o.HigherIsBetter {
				dir = "above"
			}
			who := transport.HostText(o.Host)
			if o.Device != "" {
				who += " " + transport.HostText(o.Device)
			}
			p.line(fmt.Sprintf("  %s: %s %g, %.0f%% %s the %s median %g of %d",
				who, o.Metric, o.V, 100*o.Worse, dir, o.Scope, o.Median, o.Peers))
		}
		p.line("")
	}
	p.printDriverAdvisories(d.DriverAdvisories)
}

func pairName(pr isolate.Pair) string {
	return transport.HostText(pr.Hosts[0]) + " + " + transport.HostText(pr.Hosts[1])
}
