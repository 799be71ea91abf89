package lint

import (
	"fmt"
)

// persistenceModeRule declares persistence_mode.
func persistenceModeRule() Rule {
	return Rule{
		Name:     "persistence_mode",
		Severity: Warning,
		Summary:  "GPU persistence mode is off.",
		Check:    checkPersistence,
	}
}

func checkPersistence(ctx *Context) {
	for _, n := range ctx.Nodes() {
		d := n.Driver
		if d == nil || (d.PersistenceMode.Set && d.PersistenceMode.V) {
			continue
		}
		ctx.Report(at(d.PersistenceMode, d.DeclRange),
			fmt.Sprintf("%s: persistence mode is off", nodeRef(n)),
			"Without nvidia-persistenced the driver tears GPU state down whenever no process holds the device, so every job start pays seconds of re-initialisation and ECC/clock settings can be lost (https://docs.nvidia.com/deploy/driver-persistence/index.html). Set persistence_mode = true in the driver block.")
	}
}
