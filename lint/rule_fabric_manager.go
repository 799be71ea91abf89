package lint

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/spec"
)

// fabricManagerRequiredRule declares fabric_manager_required.
func fabricManagerRequiredRule() Rule {
	return Rule{
		Name:     "fabric_manager_required",
		Severity: Error,
		Summary:  "NVSwitch hardware without fabric_manager = true (or Fabric Manager on hardware without NVSwitch).",
		Check:    checkFabricManagerRequired,
	}
}

// fabricManagerVersionRule declares fabric_manager_version.
func fabricManagerVersionRule() Rule {
	return Rule{
		Name:     "fabric_manager_version",
		Severity: Error,
		Summary:  "Fabric Manager would not be the exact version of the driver.",
		Check:    checkFabricManagerVersion,
	}
}

// rackScale reports whether the hardware's NVLink domain spans more GPUs
// than the host has: a tray of an NVL72 rack.
func rackScale(h *spec.Hardware) bool {
	return h != nil && h.NVLinkDomain > gpuCount(h) && gpuCount(h) > 0
}

func fmOn(d *spec.Driver) bool { return d != nil && d.FabricManager.Set && d.FabricManager.V }

func checkFabricManagerRequired(ctx *Context) {
	scope, ok := ctx.hostFact("fm-scope")
	if !ok {
		return
	}
	for _, n := range ctx.Nodes() {
		if n.Driver == nil || n.Hardware == nil || n.Hardware.Interconnect == "" {
			continue
		}
		nvswitch := n.Hardware.Interconnect == "nvswitch"
		if nvswitch && rackScale(n.Hardware) {
			// A rack-scale tray's NVSwitches are in the rack's switch
			// trays, whose own software trains the fabric; the compute
			// tray reports the outcome as its GPUs' fabric state
			// (NVIDIA/k8s-dra-driver-gpu and leptonai/gpud read it so).
			continue
		}
		switch {
		case nvswitch && !fmOn(n.Driver):
			ctx.ReportAs(severityFor(scope.Fact, Error), at(n.Driver.FabricManager, n.Driver.DeclRange),
				fmt.Sprintf("%s: %s has NVSwitch but fabric_manager is not enabled", nodeRef(n), hwName(n.Hardware)),
				fmt.Sprintf("On NVSwitch systems the GPUs cannot reach each other over NVLink until nvidia-fabricmanager has trained the fabric: CUDA returns \"system not yet initialized\" (cudaErrorSystemNotReady) and NCCL fails or falls back to PCIe (%s). Set fabric_manager = true in the driver block. %s", cite(scope.Fact), caveat(scope.Fact)))
		case !nvswitch && fmOn(n.Driver):
			ctx.ReportAs(Warning, n.Driver.FabricManager.Range,
				fmt.Sprintf("%s: fabric_manager = true on %s hardware without NVSwitch", nodeRef(n), n.Hardware.Interconnect),
				fmt.Sprintf("Fabric Manager is only for NVSwitch systems (%s); elsewhere the service fails to start and the unit shows as failed on every boot. Remove fabric_manager or set it to false.", cite(scope.Fact)))
		}
	}
}

func checkFabricManagerVersion(ctx *Context) {
	match, ok := ctx.hostFact("fm-version-match")
	if !ok {
		return
	}
	for _, n := range ctx.Nodes() {
		if !fmOn(n.Driver) || !n.Driver.Version.Set {
			continue
		}
		drv, ok := nodeDriver(n)
		if !ok {
			continue
		}
		pinnedDrv, hasDrvPin := ctx.Pinned(n.Name, spec.ComponentDriver)
		if pinnedFM, ok := ctx.Pinned(n.Name, spec.ComponentFabricManager); ok {
			want := drv.String()
			if hasDrvPin {
				want = pinnedDrv
			}
			if !sameDriverRelease(pinnedFM, want) {
				if r620, ok := ctx.hostFact("fm-version-match-r620"); ok && branchOf(want) >= 620 {
					// From R620 the FM-equals-driver fact is not known
					// (a Talos note says they are versioned apart):
					// the mismatch is a warning that says so.
					ctx.ReportAs(severityFor(r620.Fact, Error), n.Driver.FabricManager.Range,
						fmt.Sprintf("%s: the lock file pins Fabric Manager %s but the driver %s", nodeRef(n), pinnedFM, want),
						fmt.Sprintf("Up to R6xx %s (%s). From R620 gpuform does not know whether that still holds: %s (%s). Check NVIDIA's R620 Fabric Manager packaging before relying on either. %s", match.Statement, cite(match.Fact), r620.Statement, cite(r620.Fact), caveat(r620.Fact)))
					continue
				}
				ctx.ReportAs(severityFor(match.Fact, Error), n.Driver.FabricManager.Range,
					fmt.Sprintf("%s: the lock file pins Fabric Manager %s but the driver %s", nodeRef(n), pinnedFM, want),
					fmt.Sprintf("%s (%s); with a mismatch nvidia-fabricmanager refuses to start and NVLink stays down. Re-run `gpuform lock` so both resolve to the same release. %s", match.Statement, cite(match.Fact), caveat(match.Fact)))
			}
			continue
		}
		if drv.IsExact() || hasDrvPin {
			continue
		}
		ctx.ReportAs(Warning, n.Driver.Version.Range,
			fmt.Sprintf("%s: driver %q floats, so Fabric Manager and the driver can resolve to different releases", nodeRef(n), n.Driver.Version.V.Raw),
			fmt.Sprintf("%s (%s). With a branch-only version the driver and nvidia-fabricmanager packages are resolved separately and can land on different releases after a repository update; Fabric Manager then refuses to start. Pin the exact driver release or lock it with `gpuform lock`.", match.Statement, cite(match.Fact)))
	}
}

// branchOf is a driver release's branch (620 for "620.10.01-1"); 0 when
// it does not parse.
func branchOf(s string) int {
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	v, err := kb.ParseDriverVersion(strings.TrimSpace(s))
	if err != nil {
		return 0
	}
	return v.Major()
}

// sameDriverRelease compares two driver versions as package versions: the
// numeric release must match; a package revision suffix is ignored.
func sameDriverRelease(a, b string) bool {
	strip := func(s string) string {
		if i := strings.IndexAny(s, "-+"); i >= 0 {
			s = s[:i]
		}
		return strings.TrimSpace(s)
	}
	va, errA := kb.ParseDriverVersion(strip(a))
	vb, errB := kb.ParseDriverVersion(strip(b))
	if errA != nil || errB != nil {
		return strip(a) == strip(b)
	}
	return va.Compare(vb) == 0 && va.Len() == vb.Len()
}
