package facts

import (
	"os"
	"testing"
)

// TestParseMCInfo reads the Firmware Revision of both published ipmitool
// outputs (testdata/bmc/SOURCE.md) and refuses output without one.
func TestParseMCInfo(t *testing.T) {
	t.Parallel()
	for file, want := range map[string]string{
		"mc-info-openbmc-witherspoon.txt": "0.00",
		"bmc-info-supermicro.txt":         "1.53",
	} {
		b, err := os.ReadFile("testdata/bmc/" + file)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := ParseMCInfo(string(b)); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", file, got, err, want)
		}
	}
	for _, out := range []string{
		"",
		"Device ID                 : 32\nIPMI Version              : 2.0\n",
		"Firmware Revision         :\n",
		"Could not open device at /dev/ipmi0 or /dev/ipmi/0 or /dev/ipmidev/0: No such file or directory\n",
	} {
		if got, err := ParseMCInfo(out); err == nil {
			t.Errorf("ParseMCInfo(%q) = %q, want an error", out, got)
		}
	}
}
