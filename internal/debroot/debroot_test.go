package debroot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRootRunsRealAptAndStubsTheMachine starts a root, installs a driver
// from the test repository with the real apt, and checks that apt resolved
// the "=" dependency, that a conflicting flavour is refused as apt refuses
// it, that the stubs record instead of acting, and that sshd answers.
func TestRootRunsRealAptAndStubsTheMachine(t *testing.T) {
	r := Start(t, Options{Packages: NVIDIARepo()})
	r.Run(t, "apt-get install -y -q cuda-drivers-550=550.127.08-1 nvidia-fabricmanager-550=550.127.08-1")
	out := r.Run(t, "dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n' cuda-drivers-550 nvidia-kernel-source-550 nvidia-fabricmanager-550")
	for _, want := range []string{"cuda-drivers-550 550.127.08-1 ii", "nvidia-kernel-source-550 550.127.08-1 ii", "nvidia-fabricmanager-550 550.127.08-1 ii"} {
		if !strings.Contains(out, want) {
			t.Errorf("dpkg-query:\n%s\nwant %q", out, want)
		}
	}
	// A second fabric manager conflicts with the first: apt removes the
	// first only when told to, as on a real node.
	if out, err := r.Exec("apt-get install -y -q --no-remove nvidia-fabricmanager-580=580.95.05-1"); err == nil {
		t.Errorf("apt installed a conflicting fabric manager without removing the other:\n%s", out)
	}
	r.Run(t, "reboot; sysctl -w vm.swappiness=1; modprobe nvidia; mount -o remount,size=1G /dev/shm; systemctl enable --now nvidia-fabricmanager")
	calls := strings.Join(r.Calls(t), "\n")
	for _, want := range []string{"reboot ", "sysctl -w vm.swappiness=1", "modprobe nvidia", "mount -o remount,size=1G /dev/shm", "systemctl enable --now nvidia-fabricmanager"} {
		if !strings.Contains(calls, want) {
			t.Errorf("calls:\n%s\nwant %q", calls, want)
		}
	}
	if out := r.Run(t, "systemctl is-active nvidia-fabricmanager.service; systemctl is-enabled nvidia-fabricmanager.service"); out != "active\nenabled\n" {
		t.Errorf("systemctl state: %q", out)
	}
	// The namespace has its own processes: pid 1 is the root's sshd.
	if out := r.Run(t, "cat /proc/1/comm"); strings.TrimSpace(out) != "sshd" {
		t.Errorf("pid 1 in the root is %q, want sshd", out)
	}
	// The machine's own /run is untouched by the root's tmpfs.
	if _, err := os.Stat(filepath.Join(r.Dir, "etc/os-release")); err == nil {
		t.Errorf("the root's overlay is visible outside its mount namespace")
	}
	if !strings.Contains(r.Log(), "Server listening on 127.0.0.1") {
		t.Errorf("sshd log: %s", r.Log())
	}
}

func TestDebianURI(t *testing.T) {
	dir := t.TempDir()
	tests := map[string]struct{ file, content, want string }{
		"one-line":       {"a.list", "deb [arch=amd64] http://mirror.example/debian bookworm main\n", "http://mirror.example/debian"},
		"deb822":         {"b.sources", "Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm\n", "http://deb.debian.org/debian"},
		"security only":  {"c.sources", "Types: deb\nURIs: http://deb.debian.org/debian-security\n", ""},
		"commented":      {"d.list", "# deb http://x/debian bookworm main\n", ""},
		"trailing slash": {"e.list", "deb http://m.example/debian/ bookworm main\n", "http://m.example/debian"},
		"other archive":  {"f.list", "deb https://packages.cloud.google.com/apt cloud-sdk main\n", ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, tc.file)
			os.WriteFile(p, []byte(tc.content), 0o644)
			if got := debianURI(p); got != tc.want {
				t.Errorf("debianURI = %q, want %q", got, tc.want)
			}
		})
	}
}
