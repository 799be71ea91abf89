package resource

// Kind is what an attribute's value is, beyond the text that Change carries:
// the plan's JSON writes a Bool or Number attribute as a JSON boolean or
// number, so that readers need not parse "false" or "512".
type Kind int

const (
	// String is text (versions, paths, sysctl values, which the kernel
	// reads as text and may hold several numbers).
	String Kind = iota
	// Bool is "true" or "false".
	Bool
	// Number is a decimal integer.
	Number
)

// AttrKind says what kind of value attribute attr of resource res holds.
// Attributes are text in Change so that diffing stays a string compare;
// this is where the resource layer says which of them are booleans or
// counts.
func AttrKind(res, attr string) Kind {
	switch res {
	case DriverPackage, FabricManager, CUDAToolkit, NCCL, DCGM, ContainerToolkit, EnrootPackage, PyxisPackage, ApptainerPackage:
		if attr == "held" {
			return Bool
		}
	case CPUGovernor:
		if attr == "set_at_boot" {
			return Bool
		}
	case NvidiaPeermem:
		if attr == "loaded" || attr == "load_at_boot" {
			return Bool
		}
	case HugePages:
		if attr == "count" {
			return Number
		}
	case NICMTU:
		return Number
	}
	return String
}
