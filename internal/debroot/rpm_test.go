package debroot

import (
	"strings"
	"testing"
)

// TestRPMRootRunsRealDnf starts the Rocky-like root and installs with the
// real dnf from the test repository, with a version lock.
func TestRPMRootRunsRealDnf(t *testing.T) {
	r := Start(t, Options{RPM: true, RPMs: NVIDIARPMs()})
	r.Run(t, "dnf install -y -q nvidia-open-580.65.06 && dnf -q versionlock add nvidia-open")
	out := r.Run(t, "rpm -qa --qf '%{NAME} %{VERSION}-%{RELEASE}\\n' | sort; cat /etc/os-release")
	for _, want := range []string{"nvidia-open 580.65.06-1", "nvidia-kernel-open-580 580.65.06-1", `ID="rocky"`} {
		if !strings.Contains(out, want) {
			t.Errorf("rpm -qa / os-release:\n%s\nwant %q", out, want)
		}
	}
	if out := r.Run(t, "cat /etc/dnf/plugins/versionlock.list"); !strings.Contains(out, "nvidia-open-0:580.65.06-1.*") {
		t.Errorf("versionlock.list:\n%s", out)
	}
}
