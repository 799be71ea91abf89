package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/provision/local"
)

// TestNvbandwidthRefusesAnotherTestcase: bench asks nvbandwidth for the
// copy-engine host-to-device copy; an answer for the SM testcase (the
// published nvbandwidth v0.8 run of NVIDIA/nvbandwidth#42) is refused,
// naming both, instead of being judged as a copy-engine figure.
func TestNvbandwidthRefusesAnotherTestcase(t *testing.T) {
	sm, err := filepath.Abs("tool/testdata/nvbandwidth-v0.8-1xA100-h2d-sm-issue42.txt")
	if err != nil {
		t.Fatal(err)
	}
	ce, err := filepath.Abs("tool/testdata/nvbandwidth-v0.10-8xH100-d2d-d2h-h2d-ce.txt")
	if err != nil {
		t.Fatal(err)
	}
	run := func(capture string, tc string) (int, string) {
		t.Helper()
		bin := t.TempDir()
		if err := os.WriteFile(filepath.Join(bin, "nvbandwidth"), []byte("#!/bin/sh\ncat '"+capture+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		tr := local.New("n", local.WithEnv(map[string]string{"PATH": bin + ":/usr/bin:/bin"}))
		ms, why, err := nvbandwidth(context.Background(), tr, "", []string{tc})
		if err != nil {
			t.Fatal(err)
		}
		return len(ms), why
	}
	n, why := run(sm, tcH2D)
	if n != 0 || !strings.Contains(why, "asked nvbandwidth for host_to_device_memcpy_ce but it answered host_to_device_memcpy_sm") ||
		!strings.Contains(why, "copy engines") {
		t.Errorf("SM answer to a CE request: %d matrices, %q", n, why)
	}
	// The SM testcase asked for is its own answer.
	if n, why := run(sm, "host_to_device_memcpy_sm"); n != 1 || why != "" {
		t.Errorf("SM asked and answered: %d matrices, %q", n, why)
	}
	// A capture of several CE testcases answers with the one asked for.
	if n, why := run(ce, tcH2D); n != 1 || why != "" {
		t.Errorf("extra testcases: %d matrices, %q", n, why)
	}
}
