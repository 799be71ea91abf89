package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// driverAdvisoryWarnings names NVIDIA's security bulletins that cover the
// driver running on the host now and, when the plan installs another, the
// one it installs (lint's driver_security_advisory judges the pin; the plan
// shows what the host runs). A release the bulletins do not cover says
// nothing.
func driverAdvisoryWarnings(k *kb.KB, n *spec.Node, f *facts.Node) []string {
	var out []string
	running := ""
	if f != nil && f.Driver != nil {
		running = f.Driver.Version
	}
	if w := advisoryWarning(k, "the running driver", running); w != "" {
		out = append(out, w)
	}
	if n.Driver != nil && n.Driver.Version.Set && n.Driver.Version.V.IsExact() {
		target, _, _ := strings.Cut(n.Driver.Version.V.Raw, "-")
		if target != running {
			if w := advisoryWarning(k, "the driver this plan installs", target); w != "" {
				out = append(out, w)
			}
		}
	}
	return out
}

// advisoryWarning is one line for release v, "" when no advisory covers it.
func advisoryWarning(kbase *kb.KB, what, v string) string {
	if v == "" {
		return ""
	}
	drv, err := kb.ParseDriverVersion(v)
	if err != nil {
		return ""
	}
	advs := kbase.DriverAdvisories(drv)
	if len(advs) == 0 {
		return ""
	}
	var ids, bulletins []string
	fix := advs[0].FixedIn
	for _, a := range advs {
		if !slices.Contains(ids, a.CVE) {
			ids = append(ids, a.CVE)
		}
		if !slices.Contains(bulletins, a.Bulletin) {
			bulletins = append(bulletins, a.Bulletin)
		}
		if a.FixedIn.Compare(fix) > 0 {
			fix = a.FixedIn
		}
	}
	named := strings.Join(ids, ", ")
	if len(ids) > 4 {
		named = strings.Join(ids[:4], ", ") + fmt.Sprintf(" and %d more", len(ids)-4)
	}
	return fmt.Sprintf("%s, %s, is affected by %d CVEs of NVIDIA's driver security bulletins %s (%s); the first R%d release with every fix is %s (lint rule driver_security_advisory)", what, v, len(ids), strings.Join(bulletins, ", "), named, drv.Major(), fix)
}
