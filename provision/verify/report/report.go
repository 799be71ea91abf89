// Package report renders verify results for people and machines: a text
// report in the look of Terraform's human output (per host, per check,
// observed against expected), a versioned JSON document (the shape of
// docs/design.md, "Machine output": per-host checks with id, status,
// observed, expected) and JUnit
// XML with one testcase per host × check so CI systems show a node's
// failures natively.
//
// It does not judge anything: the checks come from provision/verify.
package report

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/gpuform/gpuform/internal/hostrange"

	"github.com/gpuform/gpuform/internal/jsonformat"
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/kmsg"
	"github.com/gpuform/gpuform/provision/verify/nccltest"
	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// Document is one verify run over one or more hosts.
type Document struct {
	// FormatVersion is jsonformat.Version.
	FormatVersion string `json:"format_version"`
	// Tier is the verification tier that ran.
	Tier verify.Tier `json:"tier,omitempty"`
	// CheckedAt is when the run started: every check it holds was taken
	// after it. A field added to the 2.x format.
	CheckedAt time.Time `json:"checked_at,omitzero"`
	// ExpiresAt is when the result stops standing (CheckedAt plus the
	// spec's health { valid_for }, default an hour): a reader that keeps
	// results (node_exporter's textfile, a scheduler's gate) must treat a
	// pass past it as no result. A field added to the 2.x format.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// Hosts are the hosts in the order they were given.
	Hosts []Host `json:"hosts"`
	// Summary counts hosts and checks by outcome.
	Summary Summary `json:"summary"`
	// Groups folds hosts with identical outcomes, as the text report
	// prints them: hosts stays per host (with every GPU's identity), groups
	// says which hosts share which problems.
	Groups []Group `json:"groups"`
	// Isolation holds the pairwise isolation of each node group whose
	// multi-node test was run on pairs of nodes (-tier fleet).
	Isolation []Isolation `json:"isolation,omitempty"`
	// Outliers are warning-class findings: devices worse than their peers
	// by more than the margin (verify { outliers = "warn" }, the default).
	Outliers []Outlier `json:"outliers,omitempty"`
	// DriverAdvisories are warning-class findings: running drivers NVIDIA's
	// security bulletins list as affected, by driver. A field added to the
	// 2.x format.
	DriverAdvisories []DriverAdvisory `json:"driver_advisories,omitempty"`
}

// Group is a set of hosts whose checks came out the same: the same
// statuses, and the same observed, expected and message on every check
// that did not pass.
type Group struct {
	// Hosts are the hosts folded Slurm style ("gpu[001-020]").
	Hosts string `json:"hosts"`
	// HostCount is how many hosts the group holds.
	HostCount int `json:"host_count"`
	// OK is true when no check of these hosts keeps them from passing:
	// none failed, errored or is a not-run check the tier needed.
	OK bool `json:"ok"`
	// Problems are the checks that keep the hosts from passing (failed,
	// errored, not run where the tier needed them), "id: message", in
	// check order.
	Problems []string `json:"problems,omitempty"`
}

// Host is one host's checks.
type Host struct {
	// Host is the inventory name of the node.
	Host string `json:"host"`
	// Source says where the NVML facts came from ("NVML agent",
	// "nvidia-smi -q -x …", "simulated NVML (dgxh100)"); empty when none.
	Source string `json:"nvml_source,omitempty"`
	// Duration is how long the host took; 0 is omitted.
	Duration time.Duration `json:"duration_ns,omitempty"`
	// Checks are the judged checks, in verify.Check's order.
	Checks []verify.CheckResult `json:"checks"`
	// NVML is the NVML report the checks judged; nil when none was read.
	// Only the Prometheus output shows it: the JSON document stays the
	// checks (its readers match on check ids).
	NVML *nvmlfacts.Report `json:"-"`
	// NCCL holds the nccl-tests results the checks judged, by test name.
	NCCL map[string]nccltest.Result `json:"-"`
	// Kernel is the kernel log's Xid and SXid lines kernel.xid judged;
	// health mode counts repeats from it. Not in the JSON document.
	Kernel *kmsg.Log `json:"-"`
	// NICs are the host's RDMA ports as the probe read them: the compute
	// rails nic.link judged (judged: true) and every other port, reported
	// only (storage and management ports the spec does not name). Absent
	// without probe facts. A field added to the 2.x format.
	NICs []verify.NICPort `json:"nics,omitempty"`
	// Firmware is the host's NIC firmware and BIOS version the runner's
	// firmware.domain_drift compares; not in the JSON document.
	Firmware *verify.Firmware `json:"-"`
}

// Summary counts outcomes.
type Summary struct {
	// Hosts is the number of hosts.
	Hosts int `json:"hosts"`
	// HostsFailed counts hosts that did not pass: at least one check
	// failed, errored, or was not run where the tier needed it.
	HostsFailed int `json:"hosts_failed"`
	// Passed counts passed checks over all hosts.
	Passed int `json:"passed"`
	// Failed counts failed checks.
	Failed int `json:"failed"`
	// Errors counts checks gpuform could not judge.
	Errors int `json:"errors"`
	// Skipped counts skipped checks (not applicable, or optional): not
	// passed, but not held against the host.
	Skipped int `json:"skipped"`
	// NotRun counts checks not run on their host: left to a deeper
	// tier, or (held against the host) a run the tier needed that the
	// host did not take part in. A field added to the 2.x format.
	NotRun int `json:"not_run"`
}

// NewHost builds a Host from checks; the NVML source is taken from the
// nvml.facts check when present.
func NewHost(host string, checks []verify.CheckResult, took time.Duration) Host {
	h := Host{Host: host, Checks: checks, Duration: took}
	for _, c := range checks {
		if c.ID == string(verify.CheckNVMLFacts) && c.Status == verify.StatusPass {
			h.Source = c.Observed
		}
	}
	return h
}

// UnreachableHost is a host gpuform could not reach: one failed check, so
// that an unreachable node fails verify like a broken one (docs/design.md,
// "An unreachable host is a failed check").
func UnreachableHost(host string, err error, took time.Duration) Host {
	return Host{Host: host, Duration: took, Checks: []verify.CheckResult{{
		ID: string(verify.CheckReachable), Status: verify.StatusFail, Expected: "reachable", Observed: "unreachable", Message: err.Error(),
		Remedy: verify.ReachableRemedy(),
	}}}
}

// New assembles a Document and its summary.
func New(k *kb.KB, tier verify.Tier, hosts []Host) *Document {
	d := &Document{FormatVersion: jsonformat.Version, Tier: tier, Hosts: hosts}
	if d.Hosts == nil {
		d.Hosts = []Host{}
	}
	d.Summary.Hosts = len(hosts)
	for _, h := range hosts {
		bad := false
		for _, c := range h.Checks {
			bad = bad || c.Blocks()
			switch c.Status {
			case verify.StatusPass:
				d.Summary.Passed++
			case verify.StatusFail:
				d.Summary.Failed++
			case verify.StatusSkip:
				d.Summary.Skipped++
			case verify.StatusNotRun:
				d.Summary.NotRun++
			default:
				// An error, or a status this gpuform does not know:
				// either way gpuform could not tell.
				d.Summary.Errors++
			}
		}
		if bad {
			d.Summary.HostsFailed++
		}
	}
	d.Groups = groups(d.Hosts)
	d.DriverAdvisories = driverAdvisories(k, d.Hosts)
	return d
}

// groups folds hosts with identical outcomes. Observed values of passed
// checks (temperatures) and GPU serials differ between identical hosts and
// are left out of what is compared.
func groups(hosts []Host) []Group {
	key := func(h Host) string {
		var b strings.Builder
		b.WriteString(h.Source)
		for _, c := range h.Checks {
			fmt.Fprintf(&b, "\x00%s\x01%s", c.ID, c.Status)
			if c.Status != verify.StatusPass {
				fmt.Fprintf(&b, "\x01%s\x01%s\x01%s", c.Observed, c.Expected, c.Message)
			}
		}
		return b.String()
	}
	out := []Group{}
	for _, g := range hostrange.GroupBy(hosts, key) {
		names := make([]string, len(g.Items))
		for i, h := range g.Items {
			names[i] = h.Host
		}
		grp := Group{Hosts: hostrange.Fold(names), HostCount: len(names), OK: true}
		for _, c := range g.Items[0].Checks {
			if c.Blocks() {
				grp.OK = false
				grp.Problems = append(grp.Problems, c.ID+": "+cmp.Or(c.Message, string(c.Status)))
			}
		}
		out = append(out, grp)
	}
	return out
}

// OK reports whether every host passed the gate: no check of any host
// blocks it (verify.CheckResult.Blocks: failed, errored, or not run where
// the tier needed it). Skipped checks and checks left to a deeper tier do
// not count as passed, and do not fail the run either. The CLI exits 2
// when it is false (docs/guide/contracts.md, "Contracts: exit codes and JSON").
func (d *Document) OK() bool { return d.Summary.HostsFailed == 0 }
