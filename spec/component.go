package spec

// Component is a versioned piece of the GPU software stack a spec pins and a
// lock file records. Its value is the name the lock file uses; the same
// component is spelled differently in the knowledge base's package tables
// and in the plan's resource names, and Component is the one place that
// knows all three spellings, so no package maps them by hand.
type Component string

// The components, in the order a lock file lists them.
const (
	// ComponentDriver is the NVIDIA driver (spec: driver { version }).
	ComponentDriver Component = "driver"
	// ComponentFabricManager is Fabric Manager, versioned like the driver
	// (spec: driver { fabric_manager = true }).
	ComponentFabricManager Component = "fabric_manager"
	// ComponentCUDA is the CUDA toolkit (spec: cuda { version }).
	ComponentCUDA Component = "cuda"
	// ComponentNCCL is the NCCL runtime (spec: nccl { version }).
	ComponentNCCL Component = "nccl"
	// ComponentDCGM is DCGM (spec: dcgm { version }).
	ComponentDCGM Component = "dcgm"
	// ComponentContainerToolkit is the NVIDIA Container Toolkit (spec:
	// container { nvidia_container_toolkit }).
	ComponentContainerToolkit Component = "nvidia_container_toolkit"
	// ComponentEnroot is enroot (spec: container { enroot_version }).
	ComponentEnroot Component = "enroot"
	// ComponentPyxis is pyxis, enroot's Slurm plugin (spec: container {
	// pyxis_version }).
	ComponentPyxis Component = "pyxis"
	// ComponentApptainer is Apptainer (spec: container { apptainer_version }).
	ComponentApptainer Component = "apptainer"
)

// Components returns every component in lock-file order.
func Components() []Component {
	return []Component{ComponentDriver, ComponentFabricManager, ComponentCUDA, ComponentNCCL, ComponentDCGM, ComponentContainerToolkit,
		ComponentEnroot, ComponentPyxis, ComponentApptainer}
}

// ParseComponent returns the component a lock file names, and false for a
// name that is not one.
func ParseComponent(lockName string) (Component, bool) {
	for _, c := range Components() {
		if string(c) == lockName {
			return c, true
		}
	}
	return "", false
}

// componentNames returns the lock names of every component, for messages.
func componentNames() []string {
	var out []string
	for _, c := range Components() {
		out = append(out, c.LockName())
	}
	return out
}

// LockName is the component's name in a lock file ("nvidia_container_toolkit").
func (c Component) LockName() string { return string(c) }

// PackageTable is the component's name in the knowledge base's package
// tables (kb/data/packages.tsv, installed-packages.tsv), which use
// NVIDIA's product names ("container-toolkit", "cuda-toolkit").
func (c Component) PackageTable() string {
	switch c {
	case ComponentFabricManager:
		return "fabric-manager"
	case ComponentCUDA:
		return "cuda-toolkit"
	case ComponentContainerToolkit:
		return "container-toolkit"
	}
	return string(c)
}

// ResourceName is the name of the plan resource that installs the component
// ("driver_package", "cuda_toolkit", "container_toolkit").
func (c Component) ResourceName() string {
	switch c {
	case ComponentDriver:
		return "driver_package"
	case ComponentCUDA:
		return "cuda_toolkit"
	case ComponentContainerToolkit:
		return "container_toolkit"
	case ComponentEnroot, ComponentPyxis, ComponentApptainer:
		return string(c) + "_package"
	}
	return string(c)
}

// String is the lock name, as users read it in messages.
func (c Component) String() string { return string(c) }
