package resource

import (
	"fmt"
	"strings"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// IMEX's files (NVIDIA IMEX guide, "Getting Started" and "IMEX Channels",
// https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/): the
// peers of the domain, one address per line, which the service reads when
// it starts; and gpuform's systemd-tmpfiles file that creates the default
// channel device at boot, since "IMEX channels will not persist through a
// reboot".
const (
	IMEXNodesConfig  = "/etc/nvidia-imex/nodes_config.cfg"
	IMEXChannelFile  = "/etc/tmpfiles.d/90-gpuform-imex-channels.conf"
	imexService      = "nvidia-imex.service"
	procDevices      = "/proc/devices"
	imexChannelsName = "nvidia-caps-imex-channels"
)

// imexPackageReads declares what imex_package reads back on a node: the
// service's unit and every branch's IMEX package among the repository
// candidates.
func imexPackageReads() facts.Reads {
	return facts.Reads{Units: []string{imexService}, RepoPackages: []string{"nvidia-imex-[0-9]+"}}
}

// buildIMEXPackage installs nvidia-imex at the driver's release, held,
// with the service enabled and running, when the driver block asks for
// imex = true.
func buildIMEXPackage(in *buildInput) ([]Resource, []string, error) {
	if !in.imexWanted() {
		return nil, nil, nil
	}
	driver, _, _ := strings.Cut(in.driverVersion, "-")
	// The name is the knowledge base's (kb/data/packages.tsv's IMEX rows,
	// kb_component imex): the Ubuntu archive's nvidia-imex-<branch>
	// (confirmed); NVIDIA's RHEL repository's is unconfirmed (the IMEX
	// guide names no package). IMEX is no lock-file component: it is
	// installed at the driver's release, as IMEX requires a compatible
	// driver stack (IMEX guide, "Other NVIDIA Software Packages").
	name, err := imexPackageName(in.kb, in.family, driver)
	if err != nil {
		return nil, nil, err
	}
	set := pkgSet{names: []string{name}, want: driver, hold: true, pins: map[string]string{}}
	if exactRelease(driver) {
		if in.family == FamilyDebian {
			set.pins[name] = aptPin(driver)
		} else {
			set.pins[name] = driver
		}
	}
	return []Resource{&pkgResource{
		base:        base{name: IMEXPackage, deps: []string{DriverPackage}},
		family:      in.family,
		set:         set,
		services:    []string{imexService},
		afterReboot: in.afterReboot,
	}}, nil, nil
}

// imexPackageName is the knowledge base's IMEX package for the family at
// the driver's release; a family it names none for is an error, not a
// guess.
func imexPackageName(k *kb.KB, family, driver string) (string, error) {
	q, ok := kbQuery(spec.ComponentDriver, family, "", driver, "")
	if !ok {
		return "", fmt.Errorf("imex: driver version %q does not parse", driver)
	}
	p, found, err := k.AuxPackage(kb.AuxIMEX, q.Family, q.Version)
	if err != nil {
		return "", fmt.Errorf("imex: %w", err)
	}
	if !found {
		return "", fmt.Errorf("imex: the knowledge base (kb/data/packages.tsv) names no IMEX package for the %s family", family)
	}
	return p.Name, nil
}

// imexWanted reports whether the node asks for IMEX with a driver.
func (in *buildInput) imexWanted() bool { return in.driverWanted() && in.n.Driver.IMEX.V }
