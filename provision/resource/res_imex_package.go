package resource

import (
	"strings"

	"github.com/gpuform/gpuform/provision/facts"
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
	// kb/data/packages.tsv's IMEX rows: the Ubuntu archive ships
	// nvidia-imex-<branch> (confirmed); NVIDIA's own repositories' name is
	// unconfirmed (the IMEX guide names no package) and assumed the same.
	// The rows carry no kb_component: IMEX is no lock-file component, so
	// the name is built here. The release is the driver's, as IMEX
	// requires a compatible driver stack (IMEX guide, "Other NVIDIA
	// Software Packages").
	name := "nvidia-imex-" + branchOf(driver)
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

// imexWanted reports whether the node asks for IMEX with a driver.
func (in *buildInput) imexWanted() bool { return in.driverWanted() && in.n.Driver.IMEX.V }
