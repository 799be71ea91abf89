//go:build cgo

package verify

import (
	"testing"

	"github.com/gpuform/gpuform/provision/verify/nvmlfacts"
)

// TestMIGUnsupported: a GPU that reports no MIG mode (NVML answers
// NOT_SUPPORTED on GPUs without MIG) satisfies "MIG off" and fails "MIG on".
func TestMIGUnsupported(t *testing.T) {
	on, off := true, false
	tests := []struct {
		name   string
		want   *bool
		mig    *nvmlfacts.MIG
		status Status
	}{
		{"off, unsupported", &off, nil, StatusPass},
		{"on, unsupported", &on, nil, StatusFail},
		{"on, enabled", &on, &nvmlfacts.MIG{Enabled: true}, StatusPass},
		{"on, pending", &on, &nvmlfacts.MIG{PendingEnabled: true}, StatusFail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := nvmlfacts.GPU{Index: 0, BusID: "00000000:18:00.0", MIG: tt.mig}
			if r := checkMIG(Expectation{KB: testKB, MIG: tt.want}, &g); r == nil || r.Status != tt.status {
				t.Errorf("%+v, want %s", r, tt.status)
			}
		})
	}
}
