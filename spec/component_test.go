package spec

import "testing"

func TestComponentNames(t *testing.T) {
	for _, tc := range []struct {
		c                         Component
		lock, table, resourceName string
	}{
		{ComponentDriver, "driver", "driver", "driver_package"},
		{ComponentFabricManager, "fabric_manager", "fabric-manager", "fabric_manager"},
		{ComponentCUDA, "cuda", "cuda-toolkit", "cuda_toolkit"},
		{ComponentNCCL, "nccl", "nccl", "nccl"},
		{ComponentDCGM, "dcgm", "dcgm", "dcgm"},
		{ComponentContainerToolkit, "nvidia_container_toolkit", "container-toolkit", "container_toolkit"},
	} {
		t.Run(tc.lock, func(t *testing.T) {
			if got := tc.c.LockName(); got != tc.lock {
				t.Errorf("LockName = %q, want %q", got, tc.lock)
			}
			if got := tc.c.PackageTable(); got != tc.table {
				t.Errorf("PackageTable = %q, want %q", got, tc.table)
			}
			if got := tc.c.ResourceName(); got != tc.resourceName {
				t.Errorf("ResourceName = %q, want %q", got, tc.resourceName)
			}
			if got, ok := ParseComponent(tc.lock); !ok || got != tc.c {
				t.Errorf("ParseComponent(%q) = %q, %v", tc.lock, got, ok)
			}
		})
	}
	if _, ok := ParseComponent("cuda-toolkit"); ok {
		t.Error("a package-table spelling parsed as a lock name")
	}
}
