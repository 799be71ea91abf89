package lockfile

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"github.com/gpuform/gpuform/spec"
)

// FromLock builds the lock for cfg from the lock file prev alone, as lock
// -check judges it: an exact version comes from the spec, a floating one
// from the lock file's pin when that pin is a release of it. Hosts are not
// asked: right after lock -upgrade no host runs the new pin yet, and a CI
// gate that probed them was red until every host was applied. Whether the
// hosts run what is locked is verify's and plan's question.
//
// A floating version the lock file has no release of, or a pin outside the
// spec's branch, is an error at the spec's attribute: only lock, which
// reaches the hosts, can say which release to record.
func FromLock(cfg *spec.Config, prev *spec.Lock) (*spec.Lock, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	lock := &spec.Lock{Nodes: map[string]map[spec.Component]spec.Attr[spec.Version]{}}
	for _, n := range cfg.Nodes {
		pins, d := nodePins(n, func(comp spec.Component, a *spec.Attr[spec.Version]) (spec.Version, hcl.Diagnostics) {
			pin, ok := prev.Pinned(n.Name, comp)
			switch {
			case !ok:
				return spec.Version{}, hcl.Diagnostics{{
					Severity: hcl.DiagError,
					Summary:  "Floating version not locked",
					Detail:   fmt.Sprintf("Node %q asks for %s %s, and the lock file records no release of it. Run gpuform lock to record the release the hosts run, or gpuform lock -upgrade for the newest release their package repositories offer.", n.Name, comp, a.V),
					Subject:  a.Range.Ptr(),
				}}
			case !pin.Within(a.V):
				return spec.Version{}, hcl.Diagnostics{{
					Severity: hcl.DiagError,
					Summary:  "Lock file is out of date",
					Detail:   fmt.Sprintf("The lock file pins %s %s for node %q, which is not a release of %s as the spec now asks. Run gpuform lock -upgrade to lock the newest release of %s the hosts' package repositories offer, or gpuform lock once the hosts run one.", comp, pin, n.Name, a.V, a.V),
					Subject:  a.Range.Ptr(),
				}}
			}
			return pin, nil
		})
		diags = append(diags, d...)
		if drv, ok := pins[spec.ComponentDriver]; ok && n.Driver != nil && n.Driver.FabricManager.V {
			// lock records the fabric manager the hosts run when they
			// agree, else the driver's release. The lock file's own
			// record stands while the driver pin it was made with does.
			pins[spec.ComponentFabricManager] = drv
			prevDrv, okD := prev.Pinned(n.Name, spec.ComponentDriver)
			if fm, ok := prev.Pinned(n.Name, spec.ComponentFabricManager); ok && okD && prevDrv.Raw == drv.V.Raw {
				pins[spec.ComponentFabricManager] = spec.Attr[spec.Version]{V: fm, Set: true, Range: drv.Range}
			}
		}
		if len(pins) > 0 {
			lock.Nodes[n.Name] = pins
		}
	}
	return lock, diags
}
