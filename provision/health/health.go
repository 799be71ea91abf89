package health

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuform/gpuform/lint/compat"
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
	// MaxDrainedShare is the share of the fleet (0 to 1) that may already
	// be drained by gpuform before a new drain is refused.
	MaxDrainedShare float64
}

// Decision is what to do with the node.
type Decision struct {
	// Drain is true when the node must be out of service.
	Drain bool
	// Reason is the drain reason without the "gpuform: " prefix: the
	// check, the catalogue's action and the message.
	Reason string
	// Watching lists monitor-class Xids seen but not often enough to
	// drain: "Xid 13 seen 1 of 3 times in 24h0m0s".
	Watching []string
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
		act := compat.ActionUnknown
		if c.Remedy != nil {
			act = c.Remedy.Action
		}
		// A monitor-class Xid is counted below, never drained on sight;
		// an informational one is never drained.
		if act == compat.ActionNone || (act == compat.ActionMonitor && isXidCheck(c.ID)) {
			continue
		}
		if !d.Drain {
			d.Drain, d.Reason = true, reason(c, act)
		}
	}
	st.record(sightings(h, doc.CheckedAt, now), now, p.DrainWindow)
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
				d.Reason = fmt.Sprintf("%s: %s seen %d times in %s (monitor class: NVIDIA says restart the job; repeats point to the GPU): drain and have it checked", k, describe(k), n, p.DrainWindow)
			}
			continue
		}
		d.Watching = append(d.Watching, fmt.Sprintf("%s seen %d of %d times in %s", k, n, p.DrainAfter, p.DrainWindow))
	}
	return d
}

func isXidCheck(id string) bool {
	return id == string(verify.CheckXID) || id == string(verify.CheckKernelXID)
}

// reason is "<check>: <action>: <message>", e.g. "kernel.xid: reboot:
// Xid 79 at PCI:0000:9d:00 — GPU has fallen off the bus …".
func reason(c verify.CheckResult, act compat.Action) string {
	msg := c.Message
	if msg == "" {
		msg = fmt.Sprintf("expected %s, observed %s", c.Expected, c.Observed)
	}
	msg, _, _ = strings.Cut(strings.TrimSpace(msg), "\n")
	return c.ID + ": " + string(act) + ": " + msg
}

// describe is the catalogue's meaning of a sighting key ("Xid 13").
func describe(key string) string {
	kind, code, _ := strings.Cut(key, " ")
	n, _ := strconv.ParseUint(code, 10, 64)
	if r, ok := compat.Default().Remedy(strings.ToLower(kind), strconv.FormatUint(n, 10)); ok {
		return r.Describe()
	}
	return "not in the catalogue"
}

// sightings are this run's monitor-class Xids: those NVML raised while
// verify listened, and those in the kernel log from before the run (the
// log repeats what NVML saw during it, so those are not counted twice).
func sightings(h report.Host, checkedAt, now time.Time) []Sighting {
	kb := compat.Default()
	monitor := func(kind string, code uint64) bool {
		r, ok := kb.Remedy(kind, strconv.FormatUint(code, 10))
		return ok && r.Action == compat.ActionMonitor
	}
	var out []Sighting
	if h.NVML != nil && h.NVML.XID != nil {
		for i, e := range h.NVML.XID.Events {
			if monitor("xid", e.XID) {
				out = append(out, Sighting{Key: fmt.Sprintf("nvml %s #%d xid %d gpu %d", now.UTC().Format(time.RFC3339Nano), i, e.XID, e.GPU), Kind: "Xid", Code: e.XID, At: now})
			}
		}
	}
	if h.Kernel != nil {
		for _, e := range h.Kernel.Events {
			if !e.Time.IsZero() && !checkedAt.IsZero() && !e.Time.Before(checkedAt) {
				continue
			}
			kind := "Xid"
			if e.Kind == kmsg.KindSXid {
				kind = "SXid"
			}
			if monitor(string(e.Kind), e.Code) {
				at := e.Time
				if at.IsZero() {
					at = now
				}
				out = append(out, Sighting{Key: "kmsg " + e.Line, Kind: kind, Code: e.Code, At: at})
			}
		}
	}
	return out
}

// Breaker says whether the circuit breaker holds a new drain back:
// drained of total nodes are already out of service by gpuform's drains.
func Breaker(drained, total int, p Policy) (open bool, msg string) {
	if total <= 0 {
		return false, ""
	}
	share := float64(drained) / float64(total)
	if share <= p.MaxDrainedShare {
		return false, ""
	}
	return true, fmt.Sprintf("%d of %d Slurm nodes (%.0f%%) are already drained by gpuform, more than health { max_drained_share = %g }: "+
		"this many failing at once points to a common cause (a driver rollout, the fabric, a faulty check) rather than one more broken node; "+
		"find it, resume the nodes that are fine (scontrol update NodeName=… State=RESUME) or raise max_drained_share",
		drained, total, share*100, p.MaxDrainedShare)
}

// record adds new sightings and forgets those older than the window.
func (st *State) record(new []Sighting, now time.Time, window time.Duration) {
	for _, s := range new {
		if !slices.ContainsFunc(st.Sightings, func(x Sighting) bool { return x.Key == s.Key }) {
			st.Sightings = append(st.Sightings, s)
		}
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
