package resource

import (
	_ "embed"

	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/provision/nodesh"
)

// The steps' scripts, one embedded file each under scripts/ (each says at
// its top what it takes and does). A step's script is the nodesh prelude,
// the libraries it needs, its values as positional parameters, then the
// file: values are never spliced into shell text. Adding a step's script
// is adding a file here, a variable below, and the case in
// TestStepScriptsUnderEachShell that runs it.
var (
	//go:embed scripts/file_lib.sh
	fileLibScript string
	//go:embed scripts/file_write.sh
	fileWriteScript string
	//go:embed scripts/file_remove.sh
	fileRemoveScript string
	//go:embed scripts/effect_lib.sh
	effectLibScript string
	//go:embed scripts/apply_effect.sh
	applyEffectScript string
	//go:embed scripts/systemd_unit.sh
	systemdUnitScript string
	//go:embed scripts/module_load.sh
	moduleLoadScript string
	//go:embed scripts/sysctl_apply.sh
	sysctlApplyScript string
	//go:embed scripts/shm_remount.sh
	shmRemountScript string
	//go:embed scripts/dpkg_configure.sh
	dpkgConfigureScript string
	//go:embed scripts/cpu_governor.sh
	cpuGovernorScript string
	//go:embed scripts/nic_irq_pin.sh
	nicIRQPinScript string
	//go:embed scripts/nic_mtu.sh
	nicMTUScript string
	//go:embed scripts/cdi_generate.sh
	cdiGenerateScript string
	//go:embed scripts/apt_install.sh
	aptInstallScript string
	//go:embed scripts/apt_hold.sh
	aptHoldScript string
	//go:embed scripts/dnf_install.sh
	dnfInstallScript string
	//go:embed scripts/dnf_versionlock.sh
	dnfVersionlockScript string
	//go:embed scripts/image_pull.sh
	imagePullScript string
	//go:embed scripts/image_file_pull.sh
	imageFilePullScript string
	//go:embed scripts/image_reachable.sh
	imageReachableScript string
	//go:embed scripts/image_load.sh
	imageLoadScript string
)

// scriptStep is a step (with become) that runs script with args.
func scriptStep(desc, script string, args ...string) Step {
	return Step{Description: desc, Script: nodesh.Script(script, args), Become: true}
}

// resolvingScript is script with args after facts.Resolver (resolve_in_root, resolve_path, resolve_dir):
// for the scripts that address files as the probe resolves them.
func resolvingScript(script string, args ...string) string {
	return nodesh.Script(script, args, facts.Resolver)
}

// fileScript is script with args after facts.Resolver and file_lib.sh.
func fileScript(script string, args ...string) string {
	return nodesh.Script(script, args, facts.Resolver, fileLibScript)
}

// Systemd unit actions of systemd_unit.sh.
const (
	unitEnableNow       = "enable-now"
	unitEnable          = "enable"
	unitTryRestart      = "try-restart"
	unitRestart         = "restart"
	unitRestartIfActive = "restart-if-active"
)

// systemdUnitStep runs systemctl's action on unit (a name that passed
// unitPattern, or a constant).
func systemdUnitStep(desc, action, unit string) Step {
	return scriptStep(desc, systemdUnitScript, action, unit)
}
