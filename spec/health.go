package spec

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// Health is a node's health block: how verify --local -slurm-drain (Slurm's
// HealthCheckProgram) acts on what it finds.
//
//	health {
//	  drain_after       = 3      # a monitor-class Xid drains on its 3rd sighting
//	  drain_window      = "24h"  # … within 24 hours
//	  max_drained_share = 0.1    # never drain past 10 % of the fleet drained by gpuform
//	  valid_for         = "1h"   # a verify result expires an hour after it was taken
//	  confirm_delay     = "10s"  # a performance or link failure is checked again after 10 s
//	  fleet_partition   = "gpu"  # the breaker's fleet: this Slurm partition (default: the hosts)
//	  unknown_xid       = "warn" # an Xid gpuform cannot judge: "warn" (never a pass, never drains) or "drain"
//	}
type Health struct {
	// DrainAfter is how many sightings of a monitor-class Xid (NVIDIA:
	// restart the application) within DrainWindow drain the node.
	DrainAfter Attr[int]
	// DrainWindow is the window DrainAfter counts in ("24h").
	DrainWindow Attr[Duration]
	// MaxDrainedShare is the circuit breaker: the share of the fleet (the
	// node block's hosts as Slurm nodes, 0 to 1, rounded down) health
	// mode may hold drained at once.
	MaxDrainedShare Attr[float64]
	// ConfirmDelay is how long health mode waits before it runs the
	// checks again to confirm a performance or link failure ("10s").
	ConfirmDelay Attr[Duration]
	// FleetPartition, when set, makes the circuit breaker's fleet the
	// Slurm nodes of this partition instead of the node block's hosts
	// (for specs whose hosts are a variable filled per job, or one host).
	FleetPartition Attr[string]
	// ValidFor is how long a verify result stands (its expires_at).
	ValidFor Attr[Duration]
	// UnknownXid is what an Xid or SXid gpuform cannot judge does (one
	// its catalogue does not hold, or one NVIDIA's catalogue gives no
	// action for): "warn" (the default: kernel.xid errors, never passes,
	// and health mode leaves the node in service) or "drain" (kernel.xid
	// fails and health mode drains).
	UnknownXid Attr[string]
	// DeclRange is the block's header.
	DeclRange hcl.Range
}

var healthSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "drain_after"}, {Name: "drain_window"}, {Name: "max_drained_share"}, {Name: "valid_for"}, {Name: "confirm_delay"}, {Name: "fleet_partition"}, {Name: "unknown_xid"},
}}

// Health defaults. See docs/guide/bad-node.md ("Find the bad node") for why.
const (
	// DefaultDrainAfter: a monitor-class Xid drains on its third sighting.
	DefaultDrainAfter = 3
	// DefaultDrainWindow is the window the sightings are counted in.
	DefaultDrainWindow = 24 * time.Hour
	// DefaultMaxDrainedShare: with more than a tenth of the fleet already
	// drained by gpuform, a new failure is more likely a common cause (a
	// rollout, the fabric, a bad check) than one more broken node.
	DefaultMaxDrainedShare = 0.10
	// DefaultValidFor is how long a verify result stands.
	DefaultValidFor = time.Hour
	// DefaultConfirmDelay: long enough for a link to retrain or a thermal
	// excursion to pass, short enough to stay well inside slurmd's
	// health check interval.
	DefaultConfirmDelay = 10 * time.Second
)

// confirm_delay's bounds: a second at least, five minutes at most (the
// health check must end before its next interval).
const (
	minConfirmDelay = time.Second
	maxConfirmDelay = 5 * time.Minute
)

// healthDurations bound drain_window and valid_for: at least a minute (a
// health check interval), at most 30 days.
const (
	minHealthDuration = time.Minute
	maxHealthDuration = 30 * 24 * time.Hour
)

func decodeHealth(blk *hcl.Block, ctx *hcl.EvalContext) (*Health, hcl.Diagnostics) {
	dec, _ := blockDecoder(blk, healthSchema, ctx)
	h := &Health{DeclRange: blk.DefRange}
	h.DrainAfter = dec.int("drain_after", 1, 1000)
	h.MaxDrainedShare = dec.float("max_drained_share", 0, 1)
	drainWindow := dec.string("drain_window")
	validFor := dec.string("valid_for")
	confirmDelay := dec.string("confirm_delay")
	h.UnknownXid = dec.string("unknown_xid")
	if a := &h.UnknownXid; a.Set && a.V != "warn" && a.V != "drain" {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid unknown_xid",
			Detail:   fmt.Sprintf("unknown_xid is \"warn\" or \"drain\", not %q.%s", a.V, didYouMeanSuffix(a.V, []string{"warn", "drain"})),
			Subject:  a.Range.Ptr(),
		})
		a.Set = false
	}
	h.FleetPartition = dec.string("fleet_partition")
	if a := &h.FleetPartition; a.Set && (a.V == "" || strings.ContainsAny(a.V, " ,=\t\n")) {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid fleet_partition",
			Detail:   fmt.Sprintf("%q is not a Slurm partition name: one name, no spaces, commas or '='.", a.V),
			Subject:  a.Range.Ptr(),
		})
		a.Set = false
	}
	var ok bool
	if h.ConfirmDelay, ok = durationAttr(confirmDelay, minConfirmDelay, maxConfirmDelay); !ok {
		dec.diags = append(dec.diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Invalid confirm_delay",
			Detail:   fmt.Sprintf("%q is not a duration between 1s and 5m like \"10s\": health mode waits this long before it checks a performance or link failure again.", confirmDelay.V),
			Subject:  confirmDelay.Range.Ptr(),
		})
	}
	for _, d := range []struct {
		to   *Attr[Duration]
		from Attr[string]
	}{{&h.DrainWindow, drainWindow}, {&h.ValidFor, validFor}} {
		if *d.to, ok = durationAttr(d.from, minHealthDuration, maxHealthDuration); !ok {
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid duration",
				Detail:   fmt.Sprintf("%q is not a duration between 1m and 720h (30 days) like \"24h\".", d.from.V),
				Subject:  d.from.Range.Ptr(),
			})
		}
	}
	return h, dec.diags
}

// Policy returns the block's settings with the defaults filled in; a nil
// block is all defaults.
func (h *Health) Policy() (drainAfter int, window time.Duration, maxShare float64, validFor time.Duration) {
	drainAfter, window, maxShare, validFor = DefaultDrainAfter, DefaultDrainWindow, DefaultMaxDrainedShare, DefaultValidFor
	if h == nil {
		return
	}
	if h.DrainAfter.Set {
		drainAfter = h.DrainAfter.V
	}
	if h.MaxDrainedShare.Set {
		maxShare = h.MaxDrainedShare.V
	}
	if h.DrainWindow.Set {
		window = h.DrainWindow.V.D
	}
	if h.ValidFor.Set {
		validFor = h.ValidFor.V.D
	}
	return
}

// ConfirmDelayOrDefault is confirm_delay, or its default; a nil block is
// the default.
func (h *Health) ConfirmDelayOrDefault() time.Duration {
	if h != nil && h.ConfirmDelay.Set {
		return h.ConfirmDelay.V.D
	}
	return DefaultConfirmDelay
}

// breakerAllowsNone warns when a node's own health block lets health
// mode drain none of its hosts: the circuit breaker allows
// floor(max_drained_share × hosts) drains, which is 0 for fewer than ten
// hosts at the default 10 %.
func breakerAllowsNone(n *Node) *hcl.Diagnostic {
	h := n.Health
	if h == nil || h.FleetPartition.Set || len(n.Hosts) == 0 {
		return nil
	}
	_, _, share, _ := h.Policy()
	if math.Floor(share*float64(len(n.Hosts))+1e-9) >= 1 {
		return nil
	}
	subject := h.DeclRange
	if h.MaxDrainedShare.Set {
		subject = h.MaxDrainedShare.Range
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagWarning,
		Summary:  "Circuit breaker allows no drain",
		Detail: fmt.Sprintf("health { max_drained_share = %g } of this node block's %d host(s) rounds down to no node: health mode (verify --local -slurm-drain) will never drain one of them. "+
			"Set max_drained_share to at least %.2g, or name the Slurm partition of the whole fleet with fleet_partition.", share, len(n.Hosts), 1/float64(len(n.Hosts))),
		Subject: subject.Ptr(),
	}
}

// DrainsUnknownXid reports whether an Xid gpuform cannot judge fails the
// node (unknown_xid = "drain"); a nil block is the default, "warn".
func (h *Health) DrainsUnknownXid() bool {
	return h != nil && h.UnknownXid.Set && h.UnknownXid.V == "drain"
}
