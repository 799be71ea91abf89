package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuform/gpuform/internal/palette"

	"github.com/gpuform/gpuform/internal/hostrange"
	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/transport"
)

// DriverAdvisory is a warning-class finding: the driver a host runs is
// one NVIDIA's GPU display driver security bulletins list as affected
// (kb/data/driver-advisories.tsv). It judges no check: the
// driver the spec pins is lint's driver_security_advisory's business.
type DriverAdvisory struct {
	// Hosts are the hosts running Driver, folded ("gpu[001-004]").
	Hosts string `json:"hosts"`
	// Driver is the running release NVML reports.
	Driver string `json:"driver"`
	// CVEs are the CVE ids affecting it, in table order.
	CVEs []string `json:"cves"`
	// Bulletins are NVIDIA's bulletin numbers ("5821").
	Bulletins []string `json:"bulletins"`
	// FixedIn is the first release of the branch with every fix.
	FixedIn string `json:"fixed_in"`
}

// driverAdvisories folds the hosts by running driver and keeps the
// drivers an advisory covers.
func driverAdvisories(kbase *kb.KB, hosts []Host) []DriverAdvisory {
	var order []string
	byDriver := map[string][]string{}
	for _, h := range hosts {
		if h.NVML == nil || h.NVML.DriverVersion == "" {
			continue
		}
		v := h.NVML.DriverVersion
		if _, seen := byDriver[v]; !seen {
			order = append(order, v)
		}
		byDriver[v] = append(byDriver[v], h.Host)
	}
	var out []DriverAdvisory
	for _, v := range order {
		drv, err := kb.ParseDriverVersion(v)
		if err != nil {
			continue
		}
		advs := kbase.DriverAdvisories(drv)
		if len(advs) == 0 {
			continue
		}
		a := DriverAdvisory{Hosts: hostrange.Fold(byDriver[v]), Driver: v, FixedIn: advs[0].FixedIn.String()}
		for _, adv := range advs {
			if !slices.Contains(a.CVEs, adv.CVE) {
				a.CVEs = append(a.CVEs, adv.CVE)
			}
			if !slices.Contains(a.Bulletins, adv.Bulletin) {
				a.Bulletins = append(a.Bulletins, adv.Bulletin)
			}
			if adv.FixedIn.Compare(mustDriver(a.FixedIn)) > 0 {
				a.FixedIn = adv.FixedIn.String()
			}
		}
		out = append(out, a)
	}
	return out
}

func mustDriver(s string) kb.Version {
	v, _ := kb.ParseDriverVersion(s)
	return v
}

// printDriverAdvisories is the text report's warning section.
func (p *printer) printDriverAdvisories(advs []DriverAdvisory) {
	if len(advs) == 0 {
		return
	}
	p.line(p.paint(palette.Warn, "Warning: ") + p.paint(palette.Bold, "running drivers affected by NVIDIA security bulletins") + " (gpuform lint: driver_security_advisory)")
	for _, a := range advs {
		ids := strings.Join(a.CVEs, ", ")
		if len(a.CVEs) > 4 {
			ids = strings.Join(a.CVEs[:4], ", ") + fmt.Sprintf(" and %d more", len(a.CVEs)-4)
		}
		p.line(fmt.Sprintf("  %s: driver %s, %d CVEs of bulletins %s (%s); fixed in %s",
			transport.HostText(a.Hosts), transport.HostText(a.Driver), len(a.CVEs), strings.Join(a.Bulletins, ", "), ids, a.FixedIn))
	}
	p.line("")
}
