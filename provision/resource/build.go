package resource

import (
	"strings"

	"github.com/gpuform/gpuform/kb"
	"github.com/gpuform/gpuform/provision/facts"
	"github.com/gpuform/gpuform/spec"
)

// Resource names, in the order a plan lists them when no dependency says
// otherwise (the order of builders).
const (
	DriverPackage      = "driver_package"
	FabricManager      = "fabric_manager"
	IMEXPackage        = "imex_package"
	IMEXPeers          = "imex_peers"
	IMEXChannel        = "imex_channel"
	NvidiaPeermem      = "nvidia_peermem"
	NvidiaPersistenced = "nvidia_persistenced"
	CUDAToolkit        = "cuda_toolkit"
	NCCL               = "nccl"
	DCGM               = "dcgm"
	ContainerToolkit   = "container_toolkit"
	DockerDaemon       = "docker_daemon"
	ContainerImages    = "container_images"
	ContainerdConfig   = "containerd_config"
	CDISpec            = "cdi_spec"
	EnrootPackage      = "enroot_package"
	EnrootConf         = "enroot_conf"
	PyxisPackage       = "pyxis_package"
	PyxisPlugstack     = "pyxis_plugstack"
	ApptainerConf      = "apptainer_conf"
	ApptainerPackage   = "apptainer_package"
	ShmMount           = "shm"
	Sysctl             = "sysctl"
	HugePages          = "hugepages"
	KernelCmdline      = "kernel_cmdline"
	Limits             = "limits"
	CPUGovernor        = "cpu_governor"
	NCCLTopo           = "nccl_topo"
	NCCLConf           = "nccl_conf"
	Binding            = "binding"
	GRESConf           = "gres_conf"
	NICIRQ             = "nic_irq"
	NICIRQUnit         = "nic_irq_unit"
	IRQBalance         = "irqbalance"
	NICMTU             = "nic_mtu"
	BenchTools         = "bench_tools"
)

// Files gpuform writes. Names carry "gpuform" so the facts probe reads them
// back (inventoryReads) and plan can diff them.
const (
	SysctlFile      = "/etc/sysctl.d/90-gpuform.conf"
	HugePagesFile   = "/etc/sysctl.d/91-gpuform-hugepages.conf"
	GrubDropIn      = "/etc/default/grub.d/90-gpuform.cfg"
	LimitsFile      = "/etc/security/limits.d/90-gpuform.conf"
	ModulesLoadFile = "/etc/modules-load.d/gpuform.conf"
	GovernorFile    = "/etc/tmpfiles.d/90-gpuform-governor.conf"
	NCCLConfFile    = "/etc/nccl.conf"
	DaemonJSON      = "/etc/docker/daemon.json"
	// ContainerdConfigFile is containerd's configuration, which gpuform
	// edits key by key as TOML.
	ContainerdConfigFile = "/etc/containerd/config.toml"
	FstabFile            = "/etc/fstab"
)

// Build returns the resources that node n of a spec manages on a host with
// facts f, in dependency order. The family of f decides package names;
// settings that do not depend on packages are planned on any distribution.
// Warnings are settings gpuform cannot manage on this host and leaves alone.
// Package names, pins and toolkit features come from k.
func Build(k *kb.KB, n *spec.Node, f *facts.Node) (rs []Resource, warnings []string, err error) {
	return buildWith(builders(), k, n, f)
}

// buildWith is Build with the resource types bs (a test adds its own).
func buildWith(bs []builder, k *kb.KB, n *spec.Node, f *facts.Node) (rs []Resource, warnings []string, err error) {
	in := newBuildInput(k, n, f)
	for _, b := range bs {
		r, w, err := b.build(in)
		if err != nil {
			return nil, nil, err
		}
		rs = append(rs, r...)
		warnings = append(warnings, w...)
	}
	for _, r := range rs {
		if p, ok := r.(*pkgResource); ok {
			p.resolveOffered(f)
		}
	}
	rs = withDpkgRepair(rs, f)
	ordered, err := Order(rs)
	return ordered, warnings, err
}

// inventoryReads declares the directories where gpuform writes files with
// its name: every such file there is read into facts.Node.ManagedFiles, so
// that gpuform facts shows each one whichever resource (or earlier
// release) wrote it. A resource still declares each file it reads
// (TestDeclaredReads).
func inventoryReads() facts.Reads {
	return facts.Reads{ManagedDirs: []string{
		"/etc/gpuform",
		"/etc/sysctl.d",
		"/etc/modules-load.d",
		"/etc/modprobe.d",
		"/etc/security/limits.d",
		"/etc/default/grub.d",
		"/etc/systemd/system",
		"/etc/systemd/system/docker.service.d",
		"/etc/systemd/logind.conf.d",
		"/etc/profile.d",
		"/etc/apt/preferences.d",
		"/etc/udev/rules.d",
		"/etc/tmpfiles.d",
		"/etc/enroot/enroot.conf.d",
	}}
}

// builder makes the resources of one type for one node: none when the spec
// does not ask for it (or one that removes what gpuform wrote earlier), and
// the warnings for what it leaves alone.
type builder struct {
	// name is the resource every value build returns is named.
	name  string
	build func(in *buildInput) ([]Resource, []string, error)
	// reads is what the type's resources read back on a node (declared
	// in its res_<name>.go beside build): the probe reads the union of
	// every type's (Reads), and TestDeclaredReads holds each type to its
	// own.
	reads func() facts.Reads
}

// Reads returns what every resource type reads back on a node, together:
// the facts probe reads exactly this (facts.Options.Reads), so a file,
// directory or unit a resource compares with is declared once, in its
// res_<name>.go.
func Reads() facts.Reads { return readsOf(builders()) }

// readsOf is the union of the declarations of bs and of what every plan
// reads whatever it builds (the owner records, the inventory of gpuform's
// files).
func readsOf(bs []builder) facts.Reads {
	r := ownersReads().Union(inventoryReads())
	for _, b := range bs {
		r = r.Union(b.reads())
	}
	return r
}

// builders lists every resource type, each declared in the res_<name>.go
// file named after it. Their order is the order Build lists resources in,
// and so the order apply runs them where no dependency says otherwise.
func builders() []builder {
	return []builder{
		{DriverPackage, buildDriverPackage, driverPackageReads},
		{FabricManager, buildFabricManager, fabricManagerReads},
		{IMEXPackage, buildIMEXPackage, imexPackageReads},
		{IMEXPeers, buildIMEXPeers, imexPeersReads},
		{IMEXChannel, buildIMEXChannel, imexChannelReads},
		{NvidiaPeermem, buildNvidiaPeermem, nvidiaPeermemReads},
		{NvidiaPersistenced, buildNvidiaPersistenced, nvidiaPersistencedReads},
		{CUDAToolkit, buildCUDAToolkit, cudaToolkitReads},
		{NCCL, buildNCCL, ncclReads},
		{DCGM, buildDCGM, dcgmReads},
		{ContainerToolkit, buildContainerToolkit, containerToolkitReads},
		{DockerDaemon, buildDockerDaemon, dockerDaemonReads},
		{ContainerdConfig, buildContainerdConfig, containerdConfigReads},
		{CDISpec, buildCDISpec, cdiSpecReads},
		{EnrootPackage, buildEnrootPackage, enrootPackageReads},
		{EnrootConf, buildEnrootConf, enrootConfReads},
		{PyxisPackage, buildPyxisPackage, pyxisPackageReads},
		{PyxisPlugstack, buildPyxisPlugstack, pyxisPlugstackReads},
		{ApptainerPackage, buildApptainerPackage, apptainerPackageReads},
		{ApptainerConf, buildApptainerConf, apptainerConfReads},
		{ContainerImages, buildContainerImages, containerImagesReads},
		{ShmMount, buildShm, shmReads},
		{Sysctl, buildSysctl, sysctlReads},
		{HugePages, buildHugepages, hugepagesReads},
		{KernelCmdline, buildKernelCmdline, kernelCmdlineReads},
		{Limits, buildLimits, limitsReads},
		{CPUGovernor, buildCPUGovernor, cpuGovernorReads},
		{NCCLTopo, buildNCCLTopo, ncclTopoReads},
		{NCCLConf, buildNCCLConf, ncclConfReads},
		{Binding, buildBinding, bindingReads},
		{GRESConf, buildGRESConf, gresConfReads},
		{NICIRQ, buildNICIRQ, nicIRQReads},
		{NICIRQUnit, buildNICIRQUnit, nicIRQUnitReads},
		{IRQBalance, buildIRQBalance, irqBalanceReads},
		{NICMTU, buildNICMTU, nicMTUReads},
		{BenchTools, buildBenchTools, benchToolsReads},
	}
}

// buildInput is what every builder reads: the node block, the host's facts
// and the values several resources derive from them alike.
type buildInput struct {
	kb     *kb.KB // the knowledge base: package names, toolkit features
	n      *spec.Node
	f      *facts.Node
	family string
	// driverVersion is the driver release to install, resolved for the
	// host's family; "" when the spec pins no driver.
	driverVersion string
	// cudaVersion is the CUDA toolkit version the spec pins, or "".
	cudaVersion string
	// afterReboot reports that the driver being installed is not the one
	// running: its companions (nvidia-peermem, fabric manager,
	// persistenced) cannot start against the old module or none, so they
	// are set up for the next boot instead of failing the apply. Nil when
	// no driver is installed.
	afterReboot func(*facts.Node) bool
}

func newBuildInput(k *kb.KB, n *spec.Node, f *facts.Node) *buildInput {
	in := &buildInput{kb: k, n: n, f: f, family: f.OS.Family()}
	if n.Driver != nil && n.Driver.Version.Set {
		in.driverVersion = resolveDriverRelease(in.kb, in.family, string(n.Driver.KernelModule.V), n.Driver.Version.V.Raw, f)
	}
	if n.CUDA != nil && n.CUDA.Version.Set {
		in.cudaVersion = n.CUDA.Version.V.Raw
	}
	if in.driverWanted() {
		wantLoaded, _, _ := strings.Cut(in.driverVersion, "-")
		in.afterReboot = func(f *facts.Node) bool { return f.Driver == nil || !versionMatches(f.Driver.Version, wantLoaded) }
	}
	return in
}

// driverWanted reports that the spec pins a driver: the driver package and
// its companions are planned.
func (in *buildInput) driverWanted() bool { return in.n.Driver != nil && in.driverVersion != "" }

func optional(ok bool, name string) []string {
	if ok {
		return []string{name}
	}
	return nil
}
