package health

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/verify"
	"github.com/gpuform/gpuform/provision/verify/kmsg"
	"github.com/gpuform/gpuform/provision/verify/report"
)

// Policy is how health mode acts; spec.Health.Policy fills it.
type Policy struct {
	// DrainAfter sightings of one monitor-class Xid within DrainWindow
	// drain the node.
	DrainAfter int
	// DrainWindow is the window sightings are counted in.
	DrainWindow time.Duration
	// MaxDrainedShare is the share of the fleet (the spec's GPU nodes, 0
	// to 1) health mode may hold drained, rounded down (Limit).
	MaxDrainedShare float64
	// ConfirmDelay is how long health mode waits before it runs the
	// checks again to confirm a performance or link failure.
	ConfirmDelay time.Duration
	// KB is the knowledge base whose catalogue tells monitor-class Xids
	// and says what a counted one means.
	KB *kb.KB
}

// Decision is what to do with the node.
type Decision struct {
	// Drain is true when the node must be out of service.
	Drain bool
	// Reason is the drain reason without a prefix: the check, the
	// catalogue's action and the message.
	Reason string
	// Confirm lists the failed performance or link checks this drain
	// rests on alone: health mode runs the checks again after
	// Policy.ConfirmDelay and drains only when one fails again (Confirm).
	Confirm []verify.CheckResult
	// Watching lists monitor-class Xids seen but not often enough to
	// drain: "Xid 13 seen 1 of 3 times in 24h0m0s".
	Watching []string
	// NotApplicable lists checks that failed only because the node's
	// hardware lacks what they judge (NVLink on a GPU without it, the
	// fabric manager on a node with no NVLink at all): never a drain.
	NotApplicable []string
}

// Decide judges a verify report of this node (its first host) against the
// sightings in st, which it updates: new monitor-class sightings are
// added, those older than the window dropped. now is the time of the run.
func Decide(doc *report.Document, st *State, now time.Time, p Policy) Decision {
	var d Decision
	if len(doc.Hosts) == 0 {
		return d
	}
	h := doc.Hosts[0]
	for _, c := range h.Checks {
		if !c.Blocks() {
			continue
		}
		if why := notApplicable(c, h); why != "" {
			d.NotApplicable = append(d.NotApplicable, c.ID+": not applicable: "+why)
			continue
		}
		act := kb.ActionUnknown
		if c.Remedy != nil {
			act = c.Remedy.Action
		}
		// A monitor-class Xid is counted below, never drained on sight;
		// an informational one is never drained.
		if act == kb.ActionNone || (act == kb.ActionMonitor && isXidCheck(c.ID)) {
			continue
		}
		if confirmable(c.ID) {
			d.Confirm = append(d.Confirm, c)
			continue
		}
		if !d.Drain {
			d.Drain, d.Reason = true, reason(c, act)
		}
	}
	st.record(sightings(p.KB, h, doc.CheckedAt, now), now, p.DrainWindow)
	counts := st.counts()
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		n := counts[k]
		if n >= p.DrainAfter {
			if !d.Drain {
				d.Drain = true
				d.Reason = fmt.Sprintf("%s: %s seen %d times in %s (monitor class: NVIDIA says restart the job; repeats point to the GPU): drain and have it checked", k, describe(p.KB, k), n, p.DrainWindow)
			}
			continue
		}
		d.Watching = append(d.Watching, fmt.Sprintf("%s seen %d of %d times in %s", k, n, p.DrainAfter, p.DrainWindow))
	}
	switch {
	case d.Drain:
		// Another failure drains on its own: nothing to confirm.
		d.Confirm = nil
	case len(d.Confirm) > 0:
		c := d.Confirm[0]
		d.Drain, d.Reason = true, reason(c, action(c))
	}
	return d
}

// ConfirmAfter waits p.ConfirmDelay, runs the checks again (rerun) and
// judges that run with Confirm: the confirm-before-drain step of every
// health mode. A context that ends during the wait is an error, with d
// unchanged.
func ConfirmAfter(ctx context.Context, d Decision, p Policy, rerun func(context.Context) *report.Document) (Decision, []string, error) {
	select {
	case <-ctx.Done():
		return d, nil, ctx.Err()
	case <-time.After(p.ConfirmDelay):
	}
	d, runs := Confirm(d, rerun(ctx), p.ConfirmDelay)
	return d, runs, nil
}

// Confirm judges the second run of the checks a Decision's drain rests on
// (Decision.Confirm, run again after Policy.ConfirmDelay): the drain
// stands only when one of them fails again, with a reason that says it
// failed twice. Runs are what to show: each check's first and second
// result.
func Confirm(d Decision, second *report.Document, delay time.Duration) (Decision, []string) {
	var again map[string]verify.CheckResult
	if len(second.Hosts) > 0 {
		again = map[string]verify.CheckResult{}
		for _, c := range second.Hosts[0].Checks {
			again[c.ID] = c
		}
	}
	out := d
	out.Drain, out.Reason, out.Confirm = false, "", nil
	var runs []string
	for _, c := range d.Confirm {
		runs = append(runs, fmt.Sprintf("%s first run: %s (%s)", c.ID, c.Status, oneLine(c)))
		c2, ok := again[c.ID]
		switch {
		case !ok:
			// The second run did not judge it (the host became
			// unreachable, the tier ran out of time): the first failure
			// stands.
			runs = append(runs, fmt.Sprintf("%s second run after %s: not judged; the first failure stands", c.ID, delay))
			c2 = c
		default:
			runs = append(runs, fmt.Sprintf("%s second run after %s: %s (%s)", c.ID, delay, c2.Status, oneLine(c2)))
		}
		if (c2.Status == verify.StatusFail || c2.Status == verify.StatusError) && !out.Drain {
			out.Drain = true
			out.Reason = reason(c2, action(c2)) + fmt.Sprintf(" (failed twice, %s apart)", delay)
		}
	}
	return out, runs
}

// action is a check's catalogue action, unknown without a remedy.
func action(c verify.CheckResult) kb.Action {
	if c.Remedy != nil {
		return c.Remedy.Action
	}
	return kb.ActionUnknown
}

// confirmFamilies are the performance and link checks: a failure of one
// can be a passing glitch (a link retraining, a thermal excursion, a
// bandwidth dip under a neighbour's load), so it drains only when it
// fails again. Xids and the node's own faults (NVML gone, ECC, row remap)
// drain on sight.
var confirmFamilies = []string{
	string(verify.CheckPCIeLink), string(verify.CheckNVLink), string(verify.CheckThrottle),
	string(verify.CheckTemperature), string(verify.CheckPeerOutlier), string(verify.CheckNCCL),
	"nic",
}

// confirmable reports whether a check id ("nvml.pcie_link[gpu3]",
// "nccl.allreduce", "nic.link mlx5_0") is a performance or link check.
func confirmable(id string) bool {
	fam, _, _ := strings.Cut(id, "[")
	fam, _, _ = strings.Cut(fam, " ")
	for _, f := range confirmFamilies {
		if fam == f || strings.HasPrefix(fam, f+".") {
			return true
		}
	}
	return false
}

// notApplicable says why a failed check does not apply to this node's
// hardware ("" when it does): NVLink judged on a GPU NVML reports no
// NVLink for (a PCIe card), and the fabric manager required on a node
// none of whose GPUs has an NVLink (no NVSwitch to manage). Health mode's
// own judgement, kept here so verify's statuses stay as they are.
func notApplicable(c verify.CheckResult, h report.Host) string {
	if h.NVML == nil || len(h.NVML.GPUs) == 0 {
		return ""
	}
	fam, gpu, _ := strings.Cut(c.ID, "[")
	switch fam {
	case string(verify.CheckNVLink):
		var idx int
		if _, err := fmt.Sscanf(gpu, "gpu%d]", &idx); err != nil {
			return ""
		}
		if g := h.NVML.GPUByIndex(idx); g != nil && len(g.NVLinks) == 0 && c.Expected != "no active links" {
			return "NVML reports no NVLink on " + g.BusID + " (a PCIe-only GPU)"
		}
	case string(verify.CheckFabricManager):
		for _, g := range h.NVML.GPUs {
			if len(g.NVLinks) > 0 {
				return ""
			}
		}
		return "no GPU of this node has an NVLink, so there is no NVSwitch for nvidia-fabricmanager to manage"
	}
	return ""
}

// oneLine is a check's message, or expected and observed, on one line.
func oneLine(c verify.CheckResult) string {
	msg := c.Message
	if msg == "" {
		msg = fmt.Sprintf("expected %s, observed %s", c.Expected, c.Observed)
	}
	msg, _, _ = strings.Cut(strings.TrimSpace(msg), "\n")
	return msg
}

func isXidCheck(id string) bool {
	return id == string(verify.CheckXID) || id == string(verify.CheckKernelXID)
}

// reason is "<check>: <action>: <message>", e.g. "kernel.xid: reboot:
// Xid 79 at 00000000:9D:00.0 — GPU has fallen off the bus …".
func reason(c verify.CheckResult, act kb.Action) string {
	msg := c.Message
	if msg == "" {
		msg = fmt.Sprintf("expected %s, observed %s", c.Expected, c.Observed)
	}
	msg, _, _ = strings.Cut(strings.TrimSpace(msg), "\n")
	return c.ID + ": " + string(act) + ": " + msg
}

// describe is the catalogue's meaning of a sighting key ("Xid 13").
func describe(k *kb.KB, key string) string {
	kind, code, _ := strings.Cut(key, " ")
	n, _ := strconv.ParseUint(code, 10, 64)
	if r, ok := k.Remedy(strings.ToLower(kind), strconv.FormatUint(n, 10)); ok {
		return r.Describe()
	}
	return "not in the catalogue"
}

// sameEventSlack widens the window in which a kernel line and an NVML
// event are taken for one event: the kernel stamps the line, NVML's
// callback and verify's clock read it a moment apart.
const sameEventSlack = 2 * time.Second

// sightings are this run's monitor-class Xids. An event is identified by
// its kernel log line (the kernel's timestamp and text): a line read again
// by a later run is the same sighting. An NVML event of this run is the
// same event as a kernel line for the same Xid and GPU logged during the
// run, and is not counted beside it; one whose line is not in the log
// yet is kept as NVML's sighting with the run's span (From to At), which
// the line recognises when a later run reads it (State.record).
func sightings(kbase *kb.KB, h report.Host, runStart, now time.Time) []Sighting {
	monitor := func(kind string, code uint64) bool {
		r, ok := kbase.Remedy(kind, strconv.FormatUint(code, 10))
		return ok && r.Action == kb.ActionMonitor
	}
	var kernel []Sighting
	if h.Kernel != nil {
		for _, e := range h.Kernel.Events {
			kind := "Xid"
			if e.Kind == kmsg.KindSXid {
				kind = "SXid"
			}
			if !monitor(string(e.Kind), e.Code) {
				continue
			}
			at := e.Time
			if at.IsZero() {
				at = now
			}
			kernel = append(kernel, Sighting{Key: "kmsg " + e.Line, Kind: kind, Code: e.Code, PCI: busDevice(e.PCI), At: at})
		}
	}
	matched := make([]bool, len(kernel))
	var out []Sighting
	if h.NVML != nil && h.NVML.XID != nil {
		for i, e := range h.NVML.XID.Events {
			if !monitor("xid", e.XID) {
				continue
			}
			pci := ""
			if g := h.NVML.GPUByIndex(e.GPU); g != nil {
				pci = busDevice(g.BusID)
			}
			s := Sighting{Key: fmt.Sprintf("nvml %s #%d xid %d gpu %d", now.UTC().Format(time.RFC3339Nano), i, e.XID, e.GPU),
				Kind: "Xid", Code: e.XID, PCI: pci, At: now, From: runStart}
			if runStart.IsZero() {
				s.From = now
			}
			same := false
			for k := range kernel {
				if !matched[k] && s.sameEvent(kernel[k]) {
					matched[k], same = true, true
					break
				}
			}
			if !same {
				out = append(out, s)
			}
		}
	}
	return append(kernel, out...)
}

// sameEvent reports whether kernel line k is the event NVML sighting s
// reported: the same Xid on the same GPU (when both name it), logged
// within the span of the run that saw s.
func (s Sighting) sameEvent(k Sighting) bool {
	if s.From.IsZero() || s.Kind != k.Kind || s.Code != k.Code || !strings.HasPrefix(k.Key, "kmsg ") {
		return false
	}
	if s.PCI != "" && k.PCI != "" && s.PCI != k.PCI {
		return false
	}
	return !k.At.Before(s.From.Add(-sameEventSlack)) && !k.At.After(s.At.Add(sameEventSlack))
}

// busDevice is a PCI address's bus and device, lower case ("9d:00"), so
// NVML's "00000000:9D:00.0" and the kernel's "0000:9d:00" compare equal.
func busDevice(pci string) string {
	pci = strings.ToLower(strings.TrimSpace(pci))
	pci, _, _ = strings.Cut(pci, ".")
	parts := strings.Split(pci, ":")
	if len(parts) < 2 {
		return pci
	}
	return parts[len(parts)-2] + ":" + parts[len(parts)-1]
}

// record adds new sightings and forgets those older than the window. A
// sighting already recorded (the same key) is not added again, and a
// kernel line that is the event an earlier run saw only through NVML
// takes that sighting's place instead of counting twice.
func (st *State) record(new []Sighting, now time.Time, window time.Duration) {
	for _, s := range new {
		if slices.ContainsFunc(st.Sightings, func(x Sighting) bool { return x.Key == s.Key }) {
			continue
		}
		if i := slices.IndexFunc(st.Sightings, func(x Sighting) bool { return x.sameEvent(s) }); i >= 0 {
			st.Sightings[i] = s
			continue
		}
		st.Sightings = append(st.Sightings, s)
	}
	keep := st.Sightings[:0]
	for _, s := range st.Sightings {
		if now.Sub(s.At) <= window {
			keep = append(keep, s)
		}
	}
	st.Sightings = keep
}

// counts are the sightings per "Xid 13".
func (st *State) counts() map[string]int {
	out := map[string]int{}
	for _, s := range st.Sightings {
		out[fmt.Sprintf("%s %d", s.Kind, s.Code)]++
	}
	return out
}
