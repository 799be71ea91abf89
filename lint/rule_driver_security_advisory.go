package lint

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/spec"
)

// driverSecurityAdvisoryRule declares driver_security_advisory.
func driverSecurityAdvisoryRule() Rule {
	return Rule{
		Name:     "driver_security_advisory",
		Severity: Error,
		Summary:  "The pinned driver release is affected by an NVIDIA GPU display driver security bulletin.",
		Check:    checkDriverSecurityAdvisory,
	}
}

// advisoryConfigurationWords says which hosts a non-default advisory
// exposes.
var advisoryConfigurationWords = map[string]string{
	"mig":           "hosts that use MIG (the CVE is in MIG partition management)",
	"vgpu-host":     "vGPU hosts (the CVE is in the Virtual GPU Manager)",
	"run-installer": "hosts installed with NVIDIA's .run installer (gpuform installs distribution packages)",
}

func checkDriverSecurityAdvisory(ctx *Context) {
	for _, n := range ctx.Nodes() {
		drv, ok := nodeDriver(n)
		if !ok {
			continue
		}
		pinned := ""
		if !drv.IsExact() {
			// A floating branch is judged on the release the lock file
			// pins, when it pins one.
			p, ok := ctx.Pinned(n.Name, spec.ComponentDriver)
			if !ok {
				continue
			}
			if drv, ok = driverVersionString(p); !ok {
				continue
			}
			pinned = " (locked to " + drv.String() + ")"
		}
		advs := ctx.kb().DriverAdvisories(drv)
		if len(advs) == 0 {
			continue
		}
		a := n.Driver.Version
		var every, some []kb.DriverAdvisory
		for _, adv := range advs {
			if adv.AllConfigurations() {
				every = append(every, adv)
			} else {
				some = append(some, adv)
			}
		}
		if len(every) > 0 {
			sev := Error
			for _, adv := range every {
				sev = min(sev, severityFor(adv.Fact, Error))
			}
			ctx.ReportAs(sev, a.Range,
				fmt.Sprintf("%s: driver %s%s is affected by %s", nodeRef(n), a.V.Raw, pinned, cveList(every)),
				advisoryDetail(drv, every, ""))
		}
		for _, adv := range some {
			ctx.ReportAs(Warning, a.Range,
				fmt.Sprintf("%s: driver %s%s is affected by %s on %s", nodeRef(n), a.V.Raw, pinned, adv.CVE, advisoryConfigurationWords[adv.Configuration]),
				advisoryDetail(drv, []kb.DriverAdvisory{adv}, "Only "+advisoryConfigurationWords[adv.Configuration]+" are exposed, so this is a warning; if the node is one, treat it as an error. "))
		}
	}
}

// cveList is "CVE-2026-24187 (HIGH 8.8) and 14 more" style text: every id,
// in table order, once.
func cveList(advs []kb.DriverAdvisory) string {
	var ids []string
	for _, a := range advs {
		if !slices.Contains(ids, a.CVE) {
			ids = append(ids, a.CVE)
		}
	}
	if len(ids) <= 3 {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more CVEs", strings.Join(ids[:3], ", "), len(ids)-3)
}

// advisoryDetail names the bulletins, every CVE and the release that fixes
// all of them on the driver's branch.
func advisoryDetail(drv kb.Version, advs []kb.DriverAdvisory, lead string) string {
	fix := advs[0].FixedIn
	var bulletins, ids []string
	for _, a := range advs {
		if a.FixedIn.Compare(fix) > 0 {
			fix = a.FixedIn
		}
		b := fmt.Sprintf("%s (%s)", a.Bulletin, a.Published.Format("January 2006"))
		if !slices.Contains(bulletins, b) {
			bulletins = append(bulletins, b)
		}
		if id := a.CVE + " " + a.Severity; !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return fmt.Sprintf("%sNVIDIA's GPU display driver security bulletins %s list every R%d data-center Linux driver before the fixed release as affected: %s. Pin %s or later, the first R%d release with every fix (https://nvidia.custhelp.com/app/answers/detail/a_id/%s; table kb/data/driver-advisories.tsv).",
		lead, strings.Join(bulletins, ", "), drv.Major(), strings.Join(ids, ", "), fix, drv.Major(), advs[len(advs)-1].Bulletin)
}

// driverVersionString parses a lock file's driver pin ("580.159.03-1"):
// the package revision is dropped.
func driverVersionString(s string) (kb.Version, bool) {
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		s = s[:i]
	}
	v, err := kb.ParseDriverVersion(strings.TrimSpace(s))
	return v, err == nil && v.IsExact()
}
