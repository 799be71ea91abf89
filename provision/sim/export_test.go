package sim

import (
	"os"
	"path/filepath"
	"strings"
)

// ApplyFaults lets the tests apply a fault description no shipped profile
// carries to a materialised root, every layer derived from it as when a
// profile carries it (nvidia-smi's answers included).
func ApplyFaults(root string, faults []DeviceFault) error {
	if err := applyFaults(root, faults); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(root, MarkerFile))
	if err != nil {
		return err
	}
	_, profile, _ := strings.Cut(strings.TrimSpace(string(b)), "\nprofile ")
	return writeNvidiaSMI(root, profile)
}
