package spec

import (
	"fmt"
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
//	  unknown_xid       = "warn" # an Xid gpuform cannot judge: "warn" (never a pass, never drains) or "drain"
//	}
type Health struct {
	// DrainAfter is how many sightings of a monitor-class Xid (NVIDIA:
	// restart the application) within DrainWindow drain the node.
	DrainAfter Attr[int]
	// DrainWindow is the window DrainAfter counts in ("24h").
	DrainWindow Attr[string]
	// MaxDrainedShare is the circuit breaker: the share of the Slurm
	// fleet (0 to 1) that may already be drained by gpuform before health
	// mode refuses to drain another node.
	MaxDrainedShare Attr[float64]
	// ValidFor is how long a verify result stands (its expires_at).
	ValidFor Attr[string]
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
	{Name: "drain_after"}, {Name: "drain_window"}, {Name: "max_drained_share"}, {Name: "valid_for"}, {Name: "unknown_xid"},
}}

// Health defaults. See README "Find the bad node" for why.
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
	h.DrainWindow = dec.string("drain_window")
	h.ValidFor = dec.string("valid_for")
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
	for _, a := range []*Attr[string]{&h.DrainWindow, &h.ValidFor} {
		if !a.Set {
			continue
		}
		if d, err := time.ParseDuration(a.V); err != nil || d < minHealthDuration || d > maxHealthDuration {
			dec.diags = append(dec.diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Invalid duration",
				Detail:   fmt.Sprintf("%q is not a duration between 1m and 720h (30 days) like \"24h\".", a.V),
				Subject:  a.Range.Ptr(),
			})
			a.Set = false
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
	if d, err := time.ParseDuration(h.DrainWindow.V); h.DrainWindow.Set && err == nil {
		window = d
	}
	if d, err := time.ParseDuration(h.ValidFor.V); h.ValidFor.Set && err == nil {
		validFor = d
	}
	return
}

// DrainsUnknownXid reports whether an Xid gpuform cannot judge fails the
// node (unknown_xid = "drain"); a nil block is the default, "warn".
func (h *Health) DrainsUnknownXid() bool {
	return h != nil && h.UnknownXid.Set && h.UnknownXid.V == "drain"
}
