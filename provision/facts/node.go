package facts

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Node is the actual state of one node as read by the facts probe. Every
// field is filled from files (or, on a live root, a few commands) read in a
// single probe run; a field that could not be read is left at its zero value
// and, when its absence is surprising, a Warning says why.
type Node struct {
	// FormatVersion is jsonformat.Version at the time the facts were
	// parsed, so saved plans that carry a facts fingerprint can tell that
	// they were made by a different gpuform.
	FormatVersion string `json:"format_version"`
	// Host is the inventory name of the node; Probe fills it from the
	// transport, Parse leaves it empty.
	Host string `json:"host,omitempty"`
	// Root is the root prefix the probe read under ("/" for a live node).
	Root string `json:"root"`
	// Hostname is the node's own host name (/proc/sys/kernel/hostname,
	// else /etc/hostname), which may differ from the inventory name.
	Hostname string `json:"hostname"`
	// MachineID is /etc/machine-id; "" when the node has none.
	MachineID string `json:"machine_id,omitempty"`
	// OS is what /etc/os-release says.
	OS OS `json:"os"`
	// Arch is the machine architecture as uname -m prints it (x86_64, aarch64).
	Arch string `json:"arch"`
	// Hypervisor names the hypervisor of a virtual machine as
	// systemd-detect-virt does ("microsoft", "kvm", "amazon"), or, where
	// it could not run, the DMI vendor of a known one ("dmi:QEMU"); ""
	// on bare metal or when nothing says.
	Hypervisor string `json:"hypervisor,omitempty"`
	// BIOS is the system firmware's version and date as DMI reports them
	// (/sys/class/dmi/id/bios_version, bios_date); nil when the node has
	// neither. The BMC's firmware has no sysfs file and is not read.
	BIOS *BIOS `json:"bios,omitempty"`
	// BMC is the baseboard management controller's firmware revision as
	// ipmitool mc info prints it; nil when the node has no ipmitool or
	// no /dev/ipmi0 (not read).
	BMC *BMC `json:"bmc,omitempty"`
	// Fabric is the GPUs' NVLink fabric registration (nvidia-smi -q's
	// "Fabric" sections); nil when the probe was not asked for it
	// (Options.Fabric: a node block whose nvlink_domain is read from the
	// node).
	Fabric *NVLinkFabric `json:"nvlink_fabric,omitempty"`
	// IMEXStatus is IMEX's own view of its domain (nvidia-imex-ctl -N);
	// nil when the probe was not asked for it (Options.IMEXStatus).
	IMEXStatus *IMEXStatus `json:"imex_status,omitempty"`
	// Kernel is the running kernel.
	Kernel Kernel `json:"kernel"`
	// Driver is the loaded NVIDIA kernel driver, nil when none is loaded.
	Driver *Driver `json:"driver,omitempty"`
	// Modules are the names of loaded kernel modules, sorted.
	Modules []string `json:"modules"`
	// Packages is the package database.
	Packages Packages `json:"packages"`
	// Offers is what the host's repositories offer of the packages a plan
	// installs (QueryOffers); nil when nobody asked (the probe does not:
	// plan asks after it, knowing the spec's packages).
	Offers *Offers `json:"offers,omitempty"`
	// BundleImages are what an offline bundle (plan and apply -bundle)
	// holds of the spec's images for the node's platform, by the spec's
	// reference; nil without a bundle (the probe does not read them:
	// plan sets them). The node then loads its images from the bundle
	// and pulls none.
	BundleImages map[string]*BundleImage `json:"bundle_images,omitempty"`
	// CUDAToolkits are the toolkits found under /usr/local/cuda*, sorted by path.
	CUDAToolkits []CUDAToolkit `json:"cuda_toolkits"`
	// Docker is /etc/docker/daemon.json.
	Docker Docker `json:"docker"`
	// ContainerRuntime is /etc/nvidia-container-runtime/config.toml.
	ContainerRuntime ContainerRuntime `json:"nvidia_container_runtime"`
	// CDISpecs are the NVIDIA CDI specifications found, by path
	// (CDISpecPaths()); nil when there are none.
	CDISpecs map[string]CDISpec `json:"cdi_specs,omitempty"`
	// Existing are the PyxisPluginPaths that exist on the node.
	Existing []string `json:"existing,omitempty"`
	// Shm is the /dev/shm mount.
	Shm Shm `json:"shm"`
	// Sysctls maps a sysctl name (dotted, e.g. "kernel.numa_balancing") to its
	// current value, for the sysctls gpuform manages or checks. A sysctl the
	// kernel does not have is absent.
	Sysctls map[string]string `json:"sysctls"`
	// Limits are the pam_limits entries from /etc/security/limits.conf and
	// /etc/security/limits.d/*.conf, in file then line order.
	Limits []LimitEntry `json:"limits"`
	// HugePages describes huge page reservations and transparent huge pages.
	HugePages HugePages `json:"hugepages"`
	// CPU describes the processors.
	CPU CPU `json:"cpu"`
	// MemoryBytes is MemTotal from /proc/meminfo.
	MemoryBytes uint64 `json:"memory_bytes"`
	// Units maps a systemd unit name (e.g. "nvidia-persistenced.service") to
	// its state, for every unit the probe watched (Options.Reads.Units).
	Units map[string]UnitState `json:"units"`
	// NUMA are the NUMA nodes, sorted by ID.
	NUMA []NUMANode `json:"numa_nodes"`
	// PCI are the GPUs, NVSwitches, InfiniBand and Ethernet controllers,
	// sorted by address.
	PCI []PCIDevice `json:"pci_devices"`
	// RDMA are the RDMA devices from /sys/class/infiniband, sorted by name.
	RDMA []RDMADevice `json:"rdma_devices"`
	// NCCLConf is /etc/nccl.conf, nil when absent.
	NCCLConf *File `json:"nccl_conf,omitempty"`
	// Grub is the kernel command line configured for the next boot.
	Grub Grub `json:"grub"`
	// ManagedFiles are the files gpuform itself writes (any file whose name
	// contains "gpuform" in the directories of Options.Reads.ManagedDirs,
	// and the files of Options.Reads.ManagedFiles), keyed by
	// absolute path on the node, so plan can diff their contents.
	ManagedFiles map[string]File `json:"managed_files"`
	// ConfigFiles are the files gpuform rewrites (fstab, daemon.json,
	// nccl.conf and its own drop-ins), read byte for byte with their mode,
	// owner and where their path leads, keyed by path; an absent file is
	// here with Exists false.
	ConfigFiles map[string]ConfigFile `json:"config_files"`
	// ContainerdImports are the patterns of /etc/containerd/config.toml's
	// top-level imports and the files each matched on the node (their
	// bytes are in ConfigFiles); nil when config.toml could not be read.
	ContainerdImports []ContainerdImport `json:"containerd_imports,omitempty"`
	// SysctlNames are the sysctls the kernel has (every file under
	// /proc/sys), dotted and sorted; nil when /proc/sys could not be
	// listed (an unpacked image has none).
	SysctlNames []string `json:"sysctl_names,omitempty"`
	// Images are the image stores of the node's container runtimes, by
	// runtime ("docker", "containerd"; "enroot" and "apptainer" for the
	// image files in the directories of ImageDirsFile); a runtime that is
	// not installed is absent.
	Images map[string]*ImageStore `json:"images,omitempty"`
	// Owners are the owner records of OwnersFile: which spec manages each
	// resource gpuform put on the node; nil when the node has none.
	Owners *Owners `json:"owners,omitempty"`
	// EUID is the effective user id the probe ran as, after the host's
	// become; nil under a root prefix (a simulated node, an unpacked
	// image), where writing needs the root directory, not uid 0.
	EUID *int `json:"euid,omitempty"`
	// ImageDirTrust is the owner and mode of the image_dir directories
	// the controller asked about (Options.ImageDirs) and of every
	// directory above them; nil when it asked about none.
	ImageDirTrust *ImageDirTrust `json:"image_dir_trust,omitempty"`
	// PendingReboot is true when the node says a reboot is required
	// (/var/run/reboot-required on Debian/Ubuntu).
	PendingReboot bool `json:"pending_reboot"`
	// Warnings are non-fatal problems met while parsing (an unparsable
	// daemon.json, an unreadable section); the rest of the facts stand.
	Warnings []string `json:"warnings,omitempty"`
	// ReadLog, when set (Recording), records the declared reads asked of
	// this Node's accessors, for the test that holds each resource to its
	// declaration; nil otherwise, and never serialised. (An exported
	// field, so that cmp.Diff compares Nodes without options.)
	ReadLog *ReadLog `json:"-"`
}

// OS identifies the distribution from /etc/os-release.
type OS struct {
	// ID is the os-release ID ("ubuntu", "rocky", "rhel").
	ID string `json:"id"`
	// IDLike is the os-release ID_LIKE list ("debian", "rhel centos fedora").
	IDLike []string `json:"id_like,omitempty"`
	// VersionID is the os-release VERSION_ID ("22.04", "9.4").
	VersionID string `json:"version_id"`
	// Pretty is PRETTY_NAME, for humans.
	Pretty string `json:"pretty"`
}

// Family returns "debian" or "rhel" for distributions whose packaging
// gpuform knows, and "" otherwise.
func (o OS) Family() string {
	ids := append([]string{o.ID}, o.IDLike...)
	for _, id := range ids {
		switch id {
		case "debian", "ubuntu":
			return "debian"
		case "rhel", "centos", "fedora", "rocky", "almalinux", "amzn":
			return "rhel"
		}
	}
	return ""
}

// Kernel is the running kernel.
type Kernel struct {
	// Release is /proc/sys/kernel/osrelease ("5.15.0-91-generic").
	Release string `json:"release"`
	// Cmdline is /proc/cmdline split into arguments.
	Cmdline []string `json:"cmdline"`
}

// Arg reports the value of kernel argument name on the running kernel's
// command line: ("", true) for a bare flag, (value, true) for name=value.
// The last occurrence wins, as it does for the kernel.
func (k Kernel) Arg(name string) (value string, ok bool) {
	return argValue(k.Cmdline, name)
}

func argValue(args []string, name string) (string, bool) {
	value, ok := "", false
	for _, a := range args {
		n, v, hasValue := strings.Cut(a, "=")
		if n != name {
			continue
		}
		ok = true
		value = ""
		if hasValue {
			value = v
		}
	}
	return value, ok
}

// Driver flavours, as named by NVIDIA's driver installation guide.
const (
	// FlavorOpen is the open GPU kernel modules (MIT/GPLv2).
	FlavorOpen = "open"
	// FlavorProprietary is the closed-source kernel modules.
	FlavorProprietary = "proprietary"
)

// Driver is the loaded NVIDIA kernel driver, from /proc/driver/nvidia/version.
type Driver struct {
	// Version is the driver version ("535.129.03").
	Version string `json:"version"`
	// Flavor is FlavorOpen when the NVRM line says "Open Kernel Module",
	// FlavorProprietary otherwise.
	Flavor string `json:"flavor"`
	// NVRM is the first line of the version file, verbatim.
	NVRM string `json:"nvrm"`
}

// Package managers.
const (
	// ManagerDpkg is Debian's package database (/var/lib/dpkg/status).
	ManagerDpkg = "dpkg"
	// ManagerRPM is the RPM database, read through rpm -qa.
	ManagerRPM = "rpm"
)

// Packages is the installed package set.
type Packages struct {
	// Manager is ManagerDpkg, ManagerRPM or "" when no database was found.
	Manager string `json:"manager"`
	// Installed maps package name to the installed package.
	Installed map[string]Package `json:"installed"`
	// Available maps NVIDIA's driver, fabric manager and branch pinning
	// package names to the versions apt's lists offer (apt systems only),
	// so that a floating branch resolves to a release before apply.
	Available map[string][]string `json:"available,omitempty"`
	// GpuformHolds are the packages gpuform itself put on hold
	// (/var/lib/gpuform/apt-holds); a held package not listed was held by
	// someone else.
	GpuformHolds []string `json:"gpuform_holds,omitempty"`
	// Locks are the raw dnf versionlock patterns
	// (/etc/dnf/plugins/versionlock.list), for rpm systems.
	Locks []string `json:"locks,omitempty"`
}

// Package is one installed package.
type Package struct {
	// Version is the full package version as the manager prints it: dpkg
	// "[epoch:]upstream-revision", rpm "[epoch:]version-release".
	Version string `json:"version"`
	// Arch is the package architecture ("amd64", "x86_64", "all", "noarch").
	Arch string `json:"arch,omitempty"`
	// Held is true when the package is pinned against upgrades: dpkg
	// selection "hold" (apt-mark hold), or a dnf versionlock entry that
	// matches it.
	Held bool `json:"held"`
	// State is "" for a fully installed package, else dpkg's state of a
	// package an interrupted or failed dpkg run left behind:
	// "half-installed", "unpacked", "half-configured", "triggers-awaited"
	// or "triggers-pending". Such a package needs dpkg --configure -a.
	State string `json:"state,omitempty"`
}

// CUDAToolkit is one toolkit install under /usr/local.
type CUDAToolkit struct {
	// Path is the install directory ("/usr/local/cuda-12.4").
	Path string `json:"path"`
	// Version is version.json's "cuda" version ("12.4.1").
	Version string `json:"version"`
	// Default is true when /usr/local/cuda points at this install.
	Default bool `json:"default"`
}

// Docker is the Docker daemon configuration.
type Docker struct {
	// Present is true when /etc/docker/daemon.json exists.
	Present bool `json:"present"`
	// Daemon is daemon.json decoded as a JSON object; numbers are kept as
	// json.Number so that rewriting it loses nothing.
	Daemon map[string]any `json:"daemon,omitempty"`
	// Raw is the file as read.
	Raw string `json:"raw,omitempty"`
	// Error is set when the file exists but is not a JSON object.
	Error string `json:"error,omitempty"`
}

// DefaultRuntime returns daemon.json's "default-runtime", or "" when unset.
func (d Docker) DefaultRuntime() string {
	s, _ := d.Daemon["default-runtime"].(string)
	return s
}

// ShmSize returns daemon.json's "default-shm-size" as written ("16G"), or "".
func (d Docker) ShmSize() string {
	s, _ := d.Daemon["default-shm-size"].(string)
	return s
}

// ContainerRuntime is the NVIDIA container runtime configuration.
// PyxisPluginPaths are where pyxis's SPANK plugin is installed: its deb
// (libdir /usr/lib/<multiarch>, debian/rules), its rpm (%{_libdir}) and
// make install (/usr/local/lib), each under slurm/ (NVIDIA/pyxis Makefile
// at 107519944221822ea1dace4db8e7234b2eaa4cd5). The probe reports which
// exist.
func PyxisPluginPaths() []string {
	return []string{"/usr/lib/x86_64-linux-gnu/slurm/spank_pyxis.so", "/usr/lib/aarch64-linux-gnu/slurm/spank_pyxis.so",
		"/usr/lib64/slurm/spank_pyxis.so", "/usr/local/lib/slurm/spank_pyxis.so"}
}

// Exists reports whether the probe found path, for the paths it checks
// for existence (PyxisPluginPaths).
func (n *Node) Exists(path string) bool { return slices.Contains(n.Existing, path) }

// CDISpecPaths are where the container toolkit writes the CDI
// specification of a node's GPUs: nvidia-ctk cdi generate's
// documented --output, and where the nvidia-cdi-refresh service of toolkit
// 1.18 and later writes it
// (https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/cdi-support.html).
func CDISpecPaths() []string { return []string{"/etc/cdi/nvidia.yaml", "/var/run/cdi/nvidia.yaml"} }

// CDISpec is what gpuform reads from a CDI specification.
type CDISpec struct {
	// Kind is the spec's kind ("nvidia.com/gpu").
	Kind string `json:"kind,omitempty"`
	// Devices are the device names it declares ("0", "all", …).
	Devices []string `json:"devices,omitempty"`
	// DriverVersions are the driver releases of the libcuda.so.<release>
	// libraries it mounts, sorted: one, the running driver's, on a node
	// whose spec is current.
	DriverVersions []string `json:"driver_versions,omitempty"`
	// Error says why the file could not be read as a CDI specification.
	Error string `json:"error,omitempty"`
}

type ContainerRuntime struct {
	// Present is true when config.toml exists.
	Present bool `json:"present"`
	// Raw is the file as read.
	Raw string `json:"raw,omitempty"`
	// Keys maps "table.key" (e.g. "nvidia-container-runtime.mode") to the
	// value as written, for simple key = value lines; keys before any table
	// have no prefix. Arrays and inline tables are kept as raw text.
	Keys map[string]string `json:"keys,omitempty"`
}

// Shm describes the /dev/shm mount.
type Shm struct {
	// Mounted is true when /proc/mounts has a /dev/shm entry.
	Mounted bool `json:"mounted"`
	// Options are the mount options as listed in /proc/mounts.
	Options []string `json:"options,omitempty"`
	// SizeBytes is the size= option, or half of MemoryBytes when tmpfs was
	// mounted without one (the kernel's tmpfs default).
	SizeBytes uint64 `json:"size_bytes"`
	// SizeFromDefault is true when SizeBytes is the tmpfs default.
	SizeFromDefault bool `json:"size_from_default"`
	// FstabLine is the /etc/fstab line for /dev/shm, "" when there is none.
	FstabLine string `json:"fstab_line,omitempty"`
}

// LimitEntry is one pam_limits line.
type LimitEntry struct {
	// File is the absolute path of the file the line is in.
	File string `json:"file"`
	// Domain is the user, @group or "*".
	Domain string `json:"domain"`
	// Type is "soft", "hard" or "-".
	Type string `json:"type"`
	// Item is the limit ("memlock", "stack", "nofile").
	Item string `json:"item"`
	// Value is the limit value ("unlimited", "65536").
	Value string `json:"value"`
}

// HugePages describes huge page state.
type HugePages struct {
	// Total is HugePages_Total from /proc/meminfo.
	Total uint64 `json:"total"`
	// Free is HugePages_Free.
	Free uint64 `json:"free"`
	// PageSizeBytes is Hugepagesize.
	PageSizeBytes uint64 `json:"page_size_bytes"`
	// Transparent is the selected transparent_hugepage mode ("always",
	// "madvise", "never"), "" when the file is absent.
	Transparent string `json:"transparent,omitempty"`
}

// CPU describes the processors.
type CPU struct {
	// Model is the "model name" of the first processor, or for Arm, the
	// implementer and part codes ("ARM 0x41 part 0xd4f").
	Model string `json:"model"`
	// Sockets is the number of distinct physical packages.
	Sockets int `json:"sockets"`
	// LogicalCPUs is the number of online CPUs.
	LogicalCPUs int `json:"logical_cpus"`
	// Online is /sys/devices/system/cpu/online as a list ("0-223").
	Online string `json:"online,omitempty"`
	// Governors are the distinct cpufreq scaling governors, sorted; empty
	// when cpufreq is not exposed (VMs, some BIOS settings).
	Governors []string `json:"governors,omitempty"`
	// Vendor is the x86 vendor_id ("GenuineIntel", "AuthenticAMD"); ""
	// elsewhere.
	Vendor string `json:"vendor,omitempty"`
	// Family and ModelID are the x86 "cpu family" and "model" numbers
	// (NCCL's topology file names them for Intel CPUs); 0 when unknown.
	Family  int `json:"family,omitempty"`
	ModelID int `json:"model_id,omitempty"`
}

// UnitState is the state of one systemd unit.
type UnitState struct {
	// Enabled is what systemctl is-enabled prints: "enabled", "disabled",
	// "masked", "static", or "not-found" when there is no unit file; the
	// probe reads it from one list-unit-files, which prints the same
	// states. "unknown" when systemctl failed and could not be asked again.
	Enabled string `json:"enabled"`
	// Active is what systemctl is-active prints: "active", "inactive",
	// "failed", … On a root prefix it is "active" when systemd recorded an
	// invocation for the unit under /run/systemd/units, else "inactive".
	Active string `json:"active"`
}

// NUMANode is one NUMA node.
type NUMANode struct {
	// ID is the node number.
	ID int `json:"id"`
	// CPUs is the node's cpulist ("0-55,112-167").
	CPUs string `json:"cpus"`
	// MemoryBytes is the node's MemTotal.
	MemoryBytes uint64 `json:"memory_bytes"`
	// Distances is the node's row of the SLIT distance table.
	Distances []int `json:"distances,omitempty"`
}

// PCI device kinds the probe records.
const (
	// KindGPU is an NVIDIA VGA or 3D controller (vendor 0x10de, class
	// 0x0300 / 0x0302).
	KindGPU = "gpu"
	// KindDisplay is any other display controller of class 0x0300 /
	// 0x0302, such as a BMC's ASPEED VGA: listed, never counted as a GPU.
	KindDisplay = "display"
	// KindNVSwitch is an NVIDIA NVSwitch (vendor 0x10de, class 0x0680).
	KindNVSwitch = "nvswitch"
	// KindInfiniBand is an InfiniBand controller (class 0x0207).
	KindInfiniBand = "infiniband"
	// KindEthernet is an Ethernet controller (class 0x0200).
	KindEthernet = "ethernet"
	// KindNVMe is an NVMe controller (class 0x0108): local storage that
	// feeds data loaders and takes checkpoints.
	KindNVMe = "nvme"
)

// PCIDevice is one PCI function of a kind the probe records.
type PCIDevice struct {
	// Address is the PCI address, domain included ("0000:1b:00.0").
	Address string `json:"address"`
	// Kind is one of KindGPU, KindDisplay, KindNVSwitch, KindInfiniBand,
	// KindEthernet, KindNVMe.
	Kind string `json:"kind"`
	// Class is the 24-bit class code as sysfs prints it ("0x030200").
	Class string `json:"class"`
	// Vendor is the vendor ID ("0x10de").
	Vendor string `json:"vendor"`
	// Device is the device ID ("0x2330").
	Device string `json:"device"`
	// SubsystemVendor is the subsystem vendor ID, "" when not exposed.
	SubsystemVendor string `json:"subsystem_vendor,omitempty"`
	// SubsystemDevice is the subsystem device ID, "" when not exposed.
	SubsystemDevice string `json:"subsystem_device,omitempty"`
	// NUMANode is the device's NUMA node; -1 when the platform does not say.
	NUMANode int `json:"numa_node"`
	// CurrentLinkSpeed is as sysfs prints it ("32.0 GT/s PCIe"); "" when
	// the device has no PCIe link (e.g. GH200's C2C-attached GPU).
	CurrentLinkSpeed string `json:"current_link_speed,omitempty"`
	// MaxLinkSpeed is as sysfs prints it.
	MaxLinkSpeed string `json:"max_link_speed,omitempty"`
	// CurrentLinkWidth is the negotiated lane count; 0 when unknown.
	CurrentLinkWidth int `json:"current_link_width,omitempty"`
	// MaxLinkWidth is the maximum lane count; 0 when unknown.
	MaxLinkWidth int `json:"max_link_width,omitempty"`
	// PortMaxLinkSpeed is the max_link_speed of the bridge port the
	// device is attached to (its last parent), read for RDMA NICs only: a
	// link trains to the lower of the device's and the port's maximum, so
	// a Gen5 NIC in a Gen4 slot is capped, not degraded. "" when not read.
	PortMaxLinkSpeed string `json:"port_max_link_speed,omitempty"`
	// PortMaxLinkWidth is that port's max_link_width; 0 when not read.
	PortMaxLinkWidth int `json:"port_max_link_width,omitempty"`
	// Parents are the addresses of the bridges between the root complex and
	// the device, root port first; a device under a PCIe switch has the
	// switch's upstream and downstream ports here.
	Parents []string `json:"parents"`
	// Driver is the bound kernel driver ("nvidia", "mlx5_core"), "" if none.
	Driver string `json:"driver,omitempty"`
	// NetDevs are the network interfaces of the function, sorted.
	NetDevs []string `json:"netdevs,omitempty"`
	// RDMADevs are the RDMA devices of the function ("mlx5_0"), sorted.
	RDMADevs []string `json:"rdma_devs,omitempty"`
	// IRQs are the function's MSI/MSI-X interrupts (its msi_irqs in sysfs)
	// with the CPUs each may run on, sorted by number; read for RDMA NICs
	// only.
	IRQs []IRQ `json:"irqs,omitempty"`
}

// IRQ is one interrupt of a PCI function.
type IRQ struct {
	// Number is the Linux IRQ number (/proc/irq/N).
	Number int `json:"number"`
	// CPUs is /proc/irq/N/smp_affinity_list as the kernel prints it
	// ("0-55,112-167"); "" when it could not be read.
	CPUs string `json:"cpus,omitempty"`
}

// LinkGen returns the PCIe generation of a sysfs link speed string
// ("16.0 GT/s PCIe" → 4), or 0 when it is not one it knows.
func LinkGen(speed string) int {
	f := strings.Fields(speed)
	if len(f) == 0 {
		return 0
	}
	// Transfer rates per generation from the PCI-SIG base specifications;
	// sysfs prints them as "<rate> GT/s" with an optional " PCIe" suffix.
	switch f[0] {
	case "2.5":
		return 1
	case "5.0", "5":
		return 2
	case "8.0", "8":
		return 3
	case "16.0", "16":
		return 4
	case "32.0", "32":
		return 5
	case "64.0", "64":
		return 6
	}
	return 0
}

// RDMADevice is one entry of /sys/class/infiniband.
type RDMADevice struct {
	// Name is the RDMA device name ("mlx5_0").
	Name string `json:"name"`
	// Address is the PCI address of the function it belongs to.
	Address string `json:"address"`
	// NetDevs are the network interfaces of that function, sorted.
	NetDevs []string `json:"netdevs,omitempty"`
	// MTU maps each of NetDevs to its MTU (/sys/class/net/IF/mtu); an
	// interface whose MTU could not be read is left out.
	MTU map[string]int `json:"mtu,omitempty"`
	// Ports are the RDMA ports, sorted by number.
	Ports []RDMAPort `json:"ports"`
	// FirmwareVersion is the adapter's firmware as the driver reports it
	// (/sys/class/infiniband/DEV/fw_ver, "28.43.1014"); "" when unread.
	FirmwareVersion string `json:"fw_ver,omitempty"`
}

// BIOS is the system firmware DMI describes.
type BIOS struct {
	// Version is /sys/class/dmi/id/bios_version as the vendor writes it.
	Version string `json:"version,omitempty"`
	// Date is /sys/class/dmi/id/bios_date ("03/14/2025").
	Date string `json:"date,omitempty"`
}

// BMC is what the probe read of the node's BMC (ipmitool mc info).
type BMC struct {
	// Firmware is the "Firmware Revision" ipmitool prints: major.minor
	// ("3.10"; ipmitool 1.8 shows no third part, ipmitool#323); "" when
	// the read failed.
	Firmware string `json:"firmware,omitempty"`
	// Error says why the read failed (ipmitool's exit status and first
	// line, or the timeout); "" on success.
	Error string `json:"error,omitempty"`
}

// RDMAPort is one port of an RDMA device.
type RDMAPort struct {
	// Port is the port number (from 1).
	Port int `json:"port"`
	// LinkLayer is "InfiniBand" or "Ethernet".
	LinkLayer string `json:"link_layer"`
	// Rate is as sysfs prints it ("400 Gb/sec (4X NDR)").
	Rate string `json:"rate,omitempty"`
	// State is as sysfs prints it ("4: ACTIVE").
	State string `json:"state,omitempty"`
	// PhysState is as sysfs prints it ("5: LinkUp").
	PhysState string `json:"phys_state,omitempty"`
}

// Grub is the kernel command line configured for the next boot.
type Grub struct {
	// File is the file GRUB_CMDLINE_LINUX came from ("/etc/default/grub").
	File string `json:"file,omitempty"`
	// CmdlineLinux is GRUB_CMDLINE_LINUX split into arguments.
	CmdlineLinux []string `json:"cmdline_linux,omitempty"`
	// CmdlineLinuxDefault is GRUB_CMDLINE_LINUX_DEFAULT split into arguments.
	CmdlineLinuxDefault []string `json:"cmdline_linux_default,omitempty"`
	// DropIns are the files of /etc/default/grub.d, keyed by absolute path.
	DropIns map[string]string `json:"drop_ins,omitempty"`
}

// File is a text file read from the node.
type File struct {
	// Content is the file as read.
	Content string `json:"content"`
	// SHA256 is the hex sha256 of Content, so a plan can show a short digest.
	SHA256 string `json:"sha256"`
}

// NewFile returns a File holding content and its digest.
func NewFile(content string) File {
	sum := sha256.Sum256([]byte(content))
	return File{Content: content, SHA256: hex.EncodeToString(sum[:])}
}

// ContainerdImport is one pattern of containerd's imports, as the node
// resolves it: containerd joins a relative pattern to config.toml's
// directory and globs it (filepath.Glob, so Files are sorted).
type ContainerdImport struct {
	// Pattern is the absolute pattern ("/etc/containerd/conf.d/*.toml").
	Pattern string `json:"pattern"`
	// Files are the regular files it matched, sorted; the probe globs only
	// the last path component, so a pattern with a wildcard in a directory
	// has none here and Unread set.
	Files []string `json:"files,omitempty"`
	// Unread is true when the probe could not expand the pattern.
	Unread bool `json:"unread,omitempty"`
}

// ConfigFile is a file gpuform rewrites, as the probe read it: byte for
// byte (od), with the mode, owner, group and SELinux context of the file
// its path leads to.
type ConfigFile struct {
	// Exists is true when the path leads to something (even one that
	// could not be read: then Error says why).
	Exists bool `json:"exists"`
	// Data is the file's bytes; not in JSON, where SHA256 stands for it
	// (JSON strings cannot carry bytes that are not UTF-8).
	Data []byte `json:"-"`
	// SHA256 is the hex sha256 of Data.
	SHA256 string `json:"sha256,omitempty"`
	// Size is len(Data).
	Size int `json:"size,omitempty"`
	// Mode is the file's mode as ls -l prints it ("-rw-------").
	Mode string `json:"mode,omitempty"`
	// UID and GID are the numeric owner and group.
	UID string `json:"uid,omitempty"`
	// GID is the numeric group.
	GID string `json:"gid,omitempty"`
	// Context is the SELinux context, "" when the node has none.
	Context string `json:"selinux_context,omitempty"`
	// Resolved is the path the file really is at, when a symlink is on
	// the way (the file itself or a directory above it); "" otherwise.
	// A write goes there.
	Resolved string `json:"resolved,omitempty"`
	// Error says why gpuform must not rewrite the file (it cannot be
	// read, resolved, or is not a regular file).
	Error string `json:"error,omitempty"`
}

// Octal returns the permission bits of Mode as chmod takes them ("0600",
// "4755").
func (c ConfigFile) Octal() (string, error) {
	m := c.Mode
	if len(m) < 10 || m[0] != '-' {
		return "", fmt.Errorf("mode %q is not a regular file's", m)
	}
	var perm, special int
	for i, ch := range m[1:10] {
		bit := 1 << (8 - i)
		switch {
		case ch == rune("rwxrwxrwx"[i]):
			perm |= bit
		case ch == '-':
		case i == 2 && (ch == 's' || ch == 'S'), i == 5 && (ch == 's' || ch == 'S'), i == 8 && (ch == 't' || ch == 'T'):
			special |= map[int]int{2: 4, 5: 2, 8: 1}[i]
			if ch != 'S' && ch != 'T' {
				perm |= bit
			}
		default:
			return "", fmt.Errorf("mode %q has an unknown letter %q", m, ch)
		}
	}
	return fmt.Sprintf("%d%03o", special, perm), nil
}

// setMeta reads the "MODE UID GID CONTEXT" line of a meta record.
func (c *ConfigFile) setMeta(line string) error {
	f := strings.Fields(line)
	if len(f) != 4 {
		return fmt.Errorf("meta %q is not MODE UID GID CONTEXT", line)
	}
	for _, id := range f[1:3] {
		if _, err := strconv.ParseUint(id, 10, 32); err != nil {
			return fmt.Errorf("meta %q: %q is not a numeric id", line, id)
		}
	}
	c.Mode, c.UID, c.GID = f[0], f[1], f[2]
	if f[3] != "-" && f[3] != "?" {
		c.Context = f[3]
	}
	if _, err := c.Octal(); err != nil {
		return err
	}
	return nil
}

// Package returns the installed version of the named package.
func (n *Node) Package(name string) (version string, ok bool) {
	p, ok := n.Packages.Installed[name]
	return p.Version, ok
}

// PackageHeld reports whether the named package is installed and held.
func (n *Node) PackageHeld(name string) bool {
	return n.Packages.Installed[name].Held
}

// InterruptedPackages returns the packages dpkg left half done (State not
// empty), sorted, as "name (state)".
func (n *Node) InterruptedPackages() []string {
	var out []string
	for name, p := range n.Packages.Installed {
		if p.State != "" {
			out = append(out, name+" ("+p.State+")")
		}
	}
	sort.Strings(out)
	return out
}

// PackagesMatching returns the installed package names that start with
// prefix, sorted; e.g. "nvidia-driver-" finds the installed branch package.
func (n *Node) PackagesMatching(prefix string) []string {
	var names []string
	for name := range n.Packages.Installed {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// HasModule reports whether the kernel module is loaded. Dashes and
// underscores are the same to the kernel, so they are to HasModule.
func (n *Node) HasModule(name string) bool {
	name = strings.ReplaceAll(name, "-", "_")
	for _, m := range n.Modules {
		if m == name {
			return true
		}
	}
	return false
}

// Unit returns the state of a watched systemd unit; the name may omit
// ".service". A unit that was not watched reads as not-found.
func (n *Node) Unit(name string) UnitState {
	if !strings.Contains(name, ".") {
		name += ".service"
	}
	n.ReadLog.unit(name)
	if s, ok := n.Units[name]; ok {
		return s
	}
	return UnitState{Enabled: "not-found", Active: "inactive"}
}

// Sysctl returns the current value of the named sysctl.
func (n *Node) Sysctl(name string) (value string, ok bool) {
	v, ok := n.Sysctls[name]
	return v, ok
}

// NVMeControllers returns the NVMe controllers, in PCI address order.
func (n *Node) NVMeControllers() []PCIDevice { return n.devices(KindNVMe) }

// devices returns the PCI devices of one kind.
func (n *Node) devices(kind string) []PCIDevice {
	var out []PCIDevice
	for _, d := range n.PCI {
		if d.Kind == kind {
			out = append(out, d)
		}
	}
	return out
}

// GPUs returns the GPUs in PCI address order, which is the order
// CUDA_DEVICE_ORDER=PCI_BUS_ID and nvidia-smi use.
func (n *Node) GPUs() []PCIDevice { return n.devices(KindGPU) }

// NVIDIAGPUs returns the GPUs whose vendor is NVIDIA (0x10de). Since a BMC
// display controller such as ASPEED's is KindDisplay, this is GPUs; it is
// kept as the name callers that mean "NVIDIA's" use.
func (n *Node) NVIDIAGPUs() []PCIDevice {
	var out []PCIDevice
	for _, d := range n.GPUs() {
		if d.Vendor == VendorNVIDIA {
			out = append(out, d)
		}
	}
	return out
}

// Displays returns the display controllers that are not NVIDIA GPUs (a
// BMC's VGA).
func (n *Node) Displays() []PCIDevice { return n.devices(KindDisplay) }

// NVSwitches returns the NVSwitch devices.
func (n *Node) NVSwitches() []PCIDevice { return n.devices(KindNVSwitch) }

// NICs returns the InfiniBand and Ethernet controllers in address order.
func (n *Node) NICs() []PCIDevice {
	var out []PCIDevice
	for _, d := range n.PCI {
		if d.Kind == KindInfiniBand || d.Kind == KindEthernet {
			out = append(out, d)
		}
	}
	return out
}

// PCIDevice returns the recorded device at address.
func (n *Node) PCIDevice(address string) (PCIDevice, bool) {
	for _, d := range n.PCI {
		if d.Address == address {
			return d, true
		}
	}
	return PCIDevice{}, false
}

// RDMADevice returns the RDMA device with the given name ("mlx5_0").
func (n *Node) RDMADevice(name string) (RDMADevice, bool) {
	for _, d := range n.RDMA {
		if d.Name == name {
			return d, true
		}
	}
	return RDMADevice{}, false
}

// CUDAToolkit returns the toolkit whose version is version or starts with
// version + "." ("12.4" finds "12.4.1").
func (n *Node) CUDAToolkit(version string) (CUDAToolkit, bool) {
	for _, t := range n.CUDAToolkits {
		if t.Version == version || strings.HasPrefix(t.Version, version+".") {
			return t, true
		}
	}
	return CUDAToolkit{}, false
}

// ConfigFile returns what the probe read of a file gpuform rewrites; ok is
// false when the probe did not read path byte-exact (then nothing about it
// is known).
func (n *Node) ConfigFile(path string) (ConfigFile, bool) {
	n.ReadLog.configFile(path)
	c, ok := n.ConfigFiles[path]
	return c, ok
}

// HasSysctl reports whether the kernel has the named sysctl; known is false
// when the facts do not say (no /proc/sys listing).
func (n *Node) HasSysctl(name string) (exists, known bool) {
	if n.SysctlNames == nil {
		return false, false
	}
	_, found := slices.BinarySearch(n.SysctlNames, name)
	return found, true
}

// ManagedFile returns the content of a file gpuform wrote, by absolute path.
func (n *Node) ManagedFile(path string) (string, bool) {
	n.ReadLog.managedFile(path)
	f, ok := n.ManagedFiles[path]
	return f.Content, ok
}

// CommonParent returns the deepest bridge shared by the PCIe parent chains
// of a and b, "" when they meet only at the root complex. Two devices under
// the same PCIe switch share its downstream or upstream port.
func CommonParent(a, b PCIDevice) string {
	common := ""
	for i := 0; i < len(a.Parents) && i < len(b.Parents); i++ {
		if a.Parents[i] != b.Parents[i] {
			break
		}
		common = a.Parents[i]
	}
	return common
}

// VendorNVIDIA is NVIDIA's PCI vendor ID.
const VendorNVIDIA = "0x10de"

// Fingerprint returns the hex sha256 of the node's canonical JSON, with
// Host and Root left out (they say where the facts were read, not what they
// are) so that identical nodes have identical fingerprints. Saved plans
// record it to refuse applying a plan made from facts that changed.
func (n *Node) Fingerprint() string {
	c := *n
	c.Host = ""
	c.Root = ""
	// The node's own name and machine id tell hosts apart; they say
	// nothing a plan depends on.
	c.Hostname, c.MachineID = "", ""
	// Free huge pages change with every job that maps one; a saved plan must
	// not go stale because a training job started.
	c.HugePages.Free = 0
	// What the repositories offer (and the driver releases in apt's lists)
	// moves whenever a release is published;
	// a saved plan pins the releases it resolved, and apply checks that
	// they are still offered instead.
	c.Offers = nil
	c.Packages.Available = nil
	// encoding/json writes struct fields in declaration order and map keys
	// sorted, so the encoding is canonical for a given format version.
	b, err := json.Marshal(&c)
	if err != nil {
		// Only unsupported values (channels, NaN) fail to marshal, and Node
		// holds none: daemon.json numbers are json.Number.
		panic("facts: Node not serialisable: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
