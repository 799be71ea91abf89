package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuform/gpuform/internal/sshtest"
	"github.com/gpuform/gpuform/provision/sim"
	"github.com/gpuform/gpuform/provision/transport"
)

// hardenedHost starts a real sshd whose sessions run as nobody, in front
// of a simulated root whose loaded driver (/proc/driver/nvidia) and
// package database (/var/lib/dpkg) only root can read, as on a hardened
// node. Its sudo -n lets nobody become root again and logs each use. It
// returns the spec directory (host 127.0.0.1 with become = "sudo" and the
// driver version given), the connection flags, and the sudo log.
func hardenedHost(t *testing.T, driver string) (dir string, flags []string, sudoLog string) {
	t.Helper()
	if os.Geteuid() != 0 {
		sshtest.Missing(t, "needs root: sessions drop to nobody and sudo raises them back")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		sshtest.Missing(t, "needs setpriv (util-linux)")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		sshtest.Missing(t, "needs bash")
	}
	base := t.TempDir()
	// nobody must reach everything below but the root-only parts.
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	root, err := sim.MaterializeHost("sim://hgx-h100-stale", filepath.Join(base, "state"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chmod", "-R", "a+rX", filepath.Join(base, "state")).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v %s", err, out)
	}
	for _, d := range []string{"proc/driver/nvidia", "var/lib/dpkg"} {
		if err := os.Chmod(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(base, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// A copy of bash, set-uid root: with -p it keeps the effective uid,
	// which is how the stand-in sudo becomes root from nobody.
	rootsh := filepath.Join(bin, "rootsh")
	if out, err := exec.Command("cp", bash, rootsh).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	if err := os.Chmod(rootsh, os.ModeSetuid|0o755); err != nil {
		t.Fatal(err)
	}
	sudoLog = filepath.Join(base, "sudo.log")
	if err := os.WriteFile(sudoLog, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sudoLog, 0o666); err != nil {
		t.Fatal(err)
	}
	sudo := `#!/bin/sh
echo "$*" >> ` + transport.Quote(sudoLog) + `
[ "$1" = -n ] && [ "$2" = -- ] || { echo "sudo: unexpected arguments" >&2; exit 99; }
shift 2
exec ` + transport.Quote(rootsh) + ` --norc --noprofile -p -c 'exec "$0" --reuid=0 --regid=0 --clear-groups "$@"' ` + transport.Quote(setpriv) + ` "$@"
`
	if err := os.WriteFile(filepath.Join(bin, "sudo"), []byte(sudo), 0o755); err != nil {
		t.Fatal(err)
	}
	// Every session runs as nobody, whatever account it logged in to.
	drop := filepath.Join(bin, "as-nobody")
	if err := os.WriteFile(drop, []byte("#!/bin/sh\ncd /\nexec "+transport.Quote(setpriv)+" --reuid=65534 --regid=65534 --clear-groups /bin/sh -c \"$SSH_ORIGINAL_COMMAND\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := sshtest.Start(t, sshtest.Options{
		Env: map[string]string{
			"GPUFORM_ROOT": root,
			"GPUFORM_SIM":  "1",
			"PATH":         bin + ":" + filepath.Join(root, filepath.FromSlash(sim.BinDir)) + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
		},
		ExtraConfig: []string{"ForceCommand " + drop},
	})
	dir = t.TempDir()
	writeFile(t, filepath.Join(dir, "main.gpuform.hcl"), `inventory "hardened" {
  hosts  = ["127.0.0.1"]
  user   = "`+srv.User+`"
  port   = `+strconv.Itoa(srv.Port)+`
  become = "sudo"
}

node "n" {
  hosts = inventory.hardened
  driver {
    version = "`+driver+`"
  }
}
`)
	flags = []string{"-ssh-config", "none", "-identity", srv.UserKeyFile, "-known-hosts", srv.KnownHostsFile}
	return dir, flags, sudoLog
}

func sudoCalls(t *testing.T, log string) int {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestProbeBecomesRoot: facts, verify and lock probe a hardened host with
// its become, like plan and apply, so they see the loaded driver and the
// packages only root can read. They used to probe without it.
func TestProbeBecomesRoot(t *testing.T) {
	t.Parallel()
	dir, flags, log := hardenedHost(t, "535")
	args := func(cmd string, more ...string) []string {
		return append(append([]string{cmd}, flags...), append(more, dir)...)
	}

	t.Run("facts", func(t *testing.T) {
		before := sudoCalls(t, log)
		code, out, errOut := runCLIEnv(t, nil, args("facts", "-json")...)
		if code != ExitOK {
			t.Fatalf("facts: exit %d\n%s\n%s", code, out, errOut)
		}
		var doc struct {
			Hosts []struct {
				Facts struct {
					Driver *struct {
						Version string `json:"version"`
					} `json:"driver"`
					Packages struct {
						Installed map[string]any `json:"installed"`
					} `json:"packages"`
				} `json:"facts"`
			} `json:"hosts"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Hosts) != 1 {
			t.Fatalf("facts JSON: %v\n%s", err, out)
		}
		f := doc.Hosts[0].Facts
		if f.Driver == nil || f.Driver.Version != "535.183.06" || f.Packages.Installed["cuda-drivers-535"] == nil {
			t.Errorf("facts without root's view: driver %+v, %d packages", f.Driver, len(f.Packages.Installed))
		}
		if sudoCalls(t, log) == before {
			t.Error("facts did not probe through sudo")
		}
	})

	t.Run("lock", func(t *testing.T) {
		before := sudoCalls(t, log)
		code, out, errOut := runCLIEnv(t, nil, args("lock")...)
		if code != ExitOK {
			t.Fatalf("lock: exit %d\n%s\n%s", code, out, errOut)
		}
		lock, err := os.ReadFile(filepath.Join(dir, ".gpuform.lock.hcl"))
		if err != nil || !regexp.MustCompile(`driver +?= "535.183.06"`).Match(lock) {
			t.Errorf("lock file: %v\n%s", err, lock)
		}
		if sudoCalls(t, log) == before {
			t.Error("lock did not probe through sudo")
		}
	})

	t.Run("verify", func(t *testing.T) {
		before := sudoCalls(t, log)
		// The probe is the only command verify runs with become, and
		// the sudo stand-in is the only way to root on this host.
		code, out, errOut := runCLIEnv(t, nil, args("verify", "-format", "json")...)
		if code == ExitFailed || strings.Contains(out, "host.reachable") {
			t.Fatalf("verify could not probe: exit %d\n%s\n%s", code, out, errOut)
		}
		if sudoCalls(t, log) == before {
			t.Error("verify did not probe through sudo")
		}
	})
}
