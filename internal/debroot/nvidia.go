package debroot

import "strings"

// Releases published by NVIDIARepo. Every version appears in the knowledge
// base's tables (kb/data: packages.tsv, cuda-driver.tsv,
// driver-branches.tsv, nccl-cuda.tsv, container-toolkit.tsv);
// the "-1" revisions are the format packages.tsv confirms for NVIDIA's
// Debian repository.
var (
	// ProprietaryReleases have cuda-drivers-<branch> packages.
	ProprietaryReleases = []string{"550.90.07", "550.127.08", "580.65.06", "580.95.05"}
	// OpenReleases have nvidia-open packages.
	OpenReleases = []string{"580.65.06", "580.95.05", "590.44.01"}
	// NCCLReleases are libnccl2/libnccl-dev versions.
	NCCLReleases = []string{"2.20.5-1+cuda12.4", "2.21.5-1+cuda12.4"}
	// ToolkitReleases are container toolkit versions.
	ToolkitReleases = []string{"1.17.8-1", "1.18.0-1"}
	// CUDAReleases are cuda-toolkit-12-4 versions.
	CUDAReleases = []string{"12.4.1-1"}
)

func branch(release string) string { b, _, _ := strings.Cut(release, "."); return b }

// DriverDebs returns the packages of one driver release in one flavour,
// shaped like NVIDIA's CUDA repository for Debian: a meta package
// (cuda-drivers-<branch>, or nvidia-open for the open modules) that
// depends on its kernel module package with "=", kernel module packages
// that conflict with each other through the virtual nvidia-kernel, and
// nvidia-fabricmanager-<branch> with Provides/Conflicts/Replaces:
// nvidia-fabricmanager, as NVIDIA's apt packaging of Fabric Manager has.
func DriverDebs(release string, open bool) []Deb {
	b, v := branch(release), release+"-1"
	kernel := "nvidia-kernel-source-" + b
	meta := "cuda-drivers-" + b
	if open {
		kernel = "nvidia-kernel-open-" + b
		meta = "nvidia-open"
	}
	return []Deb{
		{Name: kernel, Version: v, Provides: "nvidia-kernel", Conflicts: "nvidia-kernel", Replaces: "nvidia-kernel"},
		{Name: meta, Version: v, Depends: kernel + " (= " + v + ")",
			Files: map[string]string{"/lib/systemd/system/nvidia-persistenced.service": unit("NVIDIA Persistence Daemon", "/usr/bin/nvidia-persistenced --verbose")}},
	}
}

// FabricManagerDeb is nvidia-fabricmanager-<branch> at a driver release.
func FabricManagerDeb(release string) Deb {
	return Deb{Name: "nvidia-fabricmanager-" + branch(release), Version: release + "-1",
		Provides: "nvidia-fabricmanager", Conflicts: "nvidia-fabricmanager", Replaces: "nvidia-fabricmanager",
		Files: map[string]string{"/lib/systemd/system/nvidia-fabricmanager.service": unit("NVIDIA fabric manager service", "/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg")}}
}

// PinningDeb is nvidia-driver-pinning-<branch>, the package NVIDIA documents
// for keeping apt on a branch. Its real version numbering is not in the
// knowledge base; the test package carries the newest release of its branch
// published here, and no apt preferences (gpuform's exact versions and
// holds do the pinning in these tests).
func PinningDeb(release string) Deb {
	return Deb{Name: "nvidia-driver-pinning-" + branch(release), Version: release + "-1"}
}

// NCCLDebs are libnccl2 and libnccl-dev at one version; the -dev package
// depends on the runtime at exactly its version, as NCCL's packaging does.
func NCCLDebs(version string) []Deb {
	return []Deb{
		{Name: "libnccl2", Version: version},
		{Name: "libnccl-dev", Version: version, Depends: "libnccl2 (= " + version + ")"},
	}
}

// ToolkitDebs are the container toolkit's four packages at one version,
// with the dependencies NVIDIA's packages declare.
func ToolkitDebs(version string) []Deb {
	return []Deb{
		{Name: "libnvidia-container1", Version: version},
		{Name: "libnvidia-container-tools", Version: version, Depends: "libnvidia-container1 (>= " + version + ")"},
		{Name: "nvidia-container-toolkit-base", Version: version},
		{Name: "nvidia-container-toolkit", Version: version, Depends: "nvidia-container-toolkit-base (= " + version + "), libnvidia-container-tools (>= " + version + "), libnvidia-container-tools (<< 2.0.0)"},
	}
}

// CUDADeb is cuda-toolkit-12-4 at a version, with the version.json the
// facts probe reads.
func CUDADeb(version string) Deb {
	up, _, _ := strings.Cut(version, "-")
	return Deb{Name: "cuda-toolkit-12-4", Version: version,
		Files: map[string]string{"/usr/local/cuda-12.4/version.json": "{\n   \"cuda\" : {\n      \"name\" : \"CUDA SDK\",\n      \"version\" : \"" + up + "\"\n   }\n}\n"}}
}

// NVIDIARepo is every release above, as one repository.
func NVIDIARepo() []Deb {
	var debs []Deb
	for _, r := range ProprietaryReleases {
		debs = append(debs, DriverDebs(r, false)...)
		debs = append(debs, FabricManagerDeb(r))
	}
	for _, r := range OpenReleases {
		debs = append(debs, DriverDebs(r, true)...)
		if !contains(ProprietaryReleases, r) {
			debs = append(debs, FabricManagerDeb(r))
		}
	}
	debs = append(debs, PinningDeb("580.95.05"), PinningDeb("590.44.01"))
	for _, v := range NCCLReleases {
		debs = append(debs, NCCLDebs(v)...)
	}
	for _, v := range ToolkitReleases {
		debs = append(debs, ToolkitDebs(v)...)
	}
	for _, v := range CUDAReleases {
		debs = append(debs, CUDADeb(v))
	}
	return debs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func unit(desc, exec string) string {
	return "[Unit]\nDescription=" + desc + "\n\n[Service]\nExecStart=" + exec + "\n\n[Install]\nWantedBy=multi-user.target\n"
}
