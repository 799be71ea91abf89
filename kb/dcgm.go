package kb

import "strings"

// DCGMRequirement is one row of dcgm-driver.tsv: the driver a DCGM major (and
// for DCGM 4, a CUDA package flavour) needs.
type DCGMRequirement struct {
	// Major is the DCGM major (2, 3, 4).
	Major int
	// Flavor is "all" or a DCGM 4 package flavour ("cuda12", "cuda13").
	Flavor string
	// MinDriver is the minimum on systems without NVSwitch.
	MinDriver DriverMinimum
	// MinDriverNVSwitch is the minimum on NVSwitch systems.
	MinDriverNVSwitch DriverMinimum
	Fact
}

func (kb *KB) loadDCGM() error {
	t, err := readTable(kb.fsys, "data/dcgm-driver.tsv", "dcgm_major", "package_flavor", "min_driver_linux",
		"min_driver_nvswitch_linux", "status", "sources", "notes")
	if err != nil {
		return err
	}
	for _, r := range t.rows {
		st, err := r.status("status")
		if err != nil {
			return err
		}
		m, err := ParseVersion(r.get("dcgm_major"))
		if err != nil || m.Len() != 1 {
			return r.errorf("dcgm_major %q: want a number", r.get("dcgm_major"))
		}
		f := r.fact(st, "sources", "notes")
		d := DCGMRequirement{Major: m.Major(), Flavor: r.get("package_flavor"), Fact: f}
		if d.MinDriver.Driver, err = ParseDriverVersion(r.get("min_driver_linux")); err != nil {
			return r.errorf("min_driver_linux: %v", err)
		}
		if d.MinDriverNVSwitch.Driver, err = ParseDriverVersion(r.get("min_driver_nvswitch_linux")); err != nil {
			return r.errorf("min_driver_nvswitch_linux: %v", err)
		}
		d.MinDriver.Fact, d.MinDriverNVSwitch.Fact = f, f
		kb.dcgm = append(kb.dcgm, d)
	}
	return nil
}

// DCGMMinDriver returns the minimum driver for DCGM version dcgm (only its
// major matters). flavor is the DCGM 4 package flavour ("cuda12", "cuda13",
// or "" for the general requirement); an unknown flavour falls back to the
// general row. nvswitch selects the NVSwitch-system minimum. ok is false
// for DCGM majors the knowledge base does not cover.
func (kb *KB) DCGMMinDriver(dcgm Version, flavor string, nvswitch bool) (DriverMinimum, bool) {
	flavor = strings.ToLower(strings.TrimSpace(flavor))
	var general, specific *DCGMRequirement
	for i, d := range kb.dcgm {
		if d.Major != dcgm.Major() || dcgm.IsZero() {
			continue
		}
		switch d.Flavor {
		case "all":
			general = &kb.dcgm[i]
		case flavor:
			specific = &kb.dcgm[i]
		}
	}
	pick := specific
	if pick == nil {
		pick = general
	}
	if pick == nil {
		return DriverMinimum{}, false
	}
	if nvswitch {
		return pick.MinDriverNVSwitch, true
	}
	return pick.MinDriver, true
}

// DCGMRequirements returns every row of dcgm-driver.tsv.
func (kb *KB) DCGMRequirements() []DCGMRequirement {
	return append([]DCGMRequirement(nil), kb.dcgm...)
}
