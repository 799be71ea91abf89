package verify

import (
	"fmt"
	"time"

	"github.com/gpuform/gpuform/provision/verify/burnin"
)

// Tier is how deep a verify run goes; each tier includes the ones before it
// and has a hard time budget.
type Tier string

// Verification tiers (docs/design.md, "Verification tiers").
const (
	// TierProbe reads NVML and sysfs only, never runs a workload, and fits
	// Slurm's HealthCheckProgram, which Slurm kills after 60 s.
	TierProbe Tier = "probe"
	// TierQuick adds DCGM diagnostics level 1 (dcgm.diag is optional by
	// default where the spec installs no DCGM). nvbandwidth is measured by
	// gpuform bench, not by verify.
	TierQuick Tier = "quick"
	// TierFull adds the single-node NCCL tests.
	TierFull Tier = "full"
	// TierFleet adds multi-node NCCL tests across the host group.
	TierFleet Tier = "fleet"
	// TierBurnin adds the burn-in (provision/verify/burnin): DCGM
	// level 3 or 4, a sustained load of verify { burnin { duration } }
	// (4h by default) with its temperatures, clocks and AER counters
	// judged, and the burn-in's record written on the node for
	// -require-burnin. Hours, not minutes: a new or repaired node's
	// qualification, never a gate.
	TierBurnin Tier = "burnin"
)

// Tiers lists the tiers from shallowest to deepest.
func Tiers() []Tier { return []Tier{TierProbe, TierQuick, TierFull, TierFleet, TierBurnin} }

// ParseTier reads a --tier value.
func ParseTier(s string) (Tier, error) {
	for _, t := range Tiers() {
		if string(t) == s {
			return t, nil
		}
	}
	return "", fmt.Errorf("unknown tier %q (want probe, quick, full, fleet or burnin)", s)
}

// Budget is the hard wall-clock limit of a tier per host. The probe budget
// leaves half of Slurm's 60 s HealthCheckProgram limit as margin; the
// others are gpuform's choices, sized for DCGM's quick diagnostic
// ("seconds", DCGM docs), an 8-GPU NCCL sweep to 16 GiB, and a multi-node
// sweep including launcher start-up.
func (t Tier) Budget() time.Duration {
	switch t {
	case TierProbe:
		return 30 * time.Second
	case TierQuick:
		return 3 * time.Minute
	case TierFull:
		return 15 * time.Minute
	case TierFleet:
		return 45 * time.Minute
	case TierBurnin:
		return BurninBudget(burnin.DefaultDuration)
	}
	return 0
}

// BurninBudget is the burn-in tier's hard limit per host for a sustained
// load of d: the fleet tier's checks, then the burn-in's DCGM run, load
// and counter reads (burnin.Budget).
func BurninBudget(d time.Duration) time.Duration { return TierFleet.Budget() + burnin.Budget(d) }

// XIDWindow is how long the NVML agent listens for XID events at a tier.
func (t Tier) XIDWindow() time.Duration {
	if t == TierProbe {
		return 2 * time.Second
	}
	return 5 * time.Second
}

func (t Tier) rank() int {
	for i, x := range Tiers() {
		if x == t {
			return i
		}
	}
	return -1
}

// Includes reports whether t runs everything o runs.
func (t Tier) Includes(o Tier) bool { return t.rank() >= o.rank() && o.rank() >= 0 }

// TierPlan says what one verify run of a host does within its budget.
type TierPlan struct {
	// Tier is the planned tier.
	Tier Tier
	// Budget is the hard limit for the whole host.
	Budget time.Duration
	// XIDWindow is passed to the NVML agent.
	XIDWindow time.Duration
	// NVML is always true: every tier reads NVML facts and sysfs.
	NVML bool
	// DCGMDiag is the DCGM diagnostic level to run when dcgmi is present; 0 = none.
	DCGMDiag int
	// NCCL are the nccl-tests runs of this tier, each with its timeout.
	NCCL []NCCLExpectation
	// Skipped are the nccl-tests runs left for a deeper tier.
	Skipped []NCCLExpectation
}

// Plan decides which checks a tier runs for an expectation. NCCL runs get
// the rest of the budget after the NVML pass, split evenly, unless their
// own timeout is shorter.
func Plan(t Tier, exp Expectation) (TierPlan, error) {
	if t.rank() < 0 {
		return TierPlan{}, fmt.Errorf("unknown tier %q", t)
	}
	p := TierPlan{Tier: t, Budget: t.Budget(), XIDWindow: t.XIDWindow(), NVML: true}
	if t.Includes(TierQuick) {
		p.DCGMDiag = 1
	}
	for _, n := range exp.NCCL {
		switch {
		case n.MultiNode && t.Includes(TierFleet), !n.MultiNode && t.Includes(TierFull):
			p.NCCL = append(p.NCCL, n)
		default:
			p.Skipped = append(p.Skipped, n)
		}
	}
	if len(p.NCCL) > 0 {
		// Reserve the probe budget for NVML, DCGM and the agent upload.
		share := (p.Budget - TierProbe.Budget() - TierQuick.Budget()) / time.Duration(len(p.NCCL))
		for i := range p.NCCL {
			if p.NCCL[i].Timeout <= 0 || p.NCCL[i].Timeout > share {
				p.NCCL[i].Timeout = share
			}
		}
	}
	return p, nil
}
