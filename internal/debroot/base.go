package debroot

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BaseVersion names the cached debootstrap root. Change it whenever what
// buildBase puts into the root changes, so that every cache rebuilds.
const BaseVersion = "debian12-bookworm-minbase-ssh-v1"

// RPMBaseVersion names the cached root of the RPM flavour: the same Debian
// root with Debian's dnf, rpm, createrepo_c and dnf-plugins-core, made to
// look like Rocky Linux 9 (os-release, an empty dpkg database, an RPM
// database), so that gpuform plans and applies with dnf.
const RPMBaseVersion = "debian12-bookworm-minbase-ssh-dnf-rocky9-v1"

// variant is one kind of cached root.
type variant struct {
	name     string
	packages []string
	// post makes the root what the variant is, after debootstrap.
	post func(dir string, run func(string, ...string) error) error
}

var debianVariant = variant{name: BaseVersion, packages: basePackages}

var rpmVariant = variant{
	name:     RPMBaseVersion,
	packages: append(append([]string(nil), basePackages...), "dnf", "rpm", "createrepo-c", "dnf-plugins-core", "file"),
	post: func(dir string, run func(string, ...string) error) error {
		files := map[string]string{
			"etc/os-release": `NAME="Rocky Linux"
VERSION="9.4 (Blue Onyx)"
ID="rocky"
ID_LIKE="rhel centos fedora"
VERSION_ID="9.4"
PLATFORM_ID="platform:el9"
PRETTY_NAME="Rocky Linux 9.4 (Blue Onyx)"
`,
			"etc/dnf/vars/releasever": "9\n",
			// Debian's rpm keeps its database in ~/.rpmdb so as not to
			// look like the system's; here it is the system's, where
			// Rocky keeps it.
			"etc/rpm/macros":                    "%_dbpath /var/lib/rpm\n",
			"etc/yum.repos.d/gpuform-test.repo": "[gpuform-test]\nname=packages with NVIDIA's names built by gpuform's tests\nbaseurl=file://" + repoMount + "\nenabled=1\ngpgcheck=0\nmetadata_expire=0\n",
		}
		for name, content := range files {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			os.Remove(p) // os-release is a symlink into /usr/lib
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				return err
			}
		}
		// dnf-plugins-core's local and post-transaction-actions plugins
		// are not part of a Rocky install (local adds a signed repository
		// of its own and fails without keys).
		for _, f := range []string{"etc/dnf/plugins/local.conf", "etc/dnf/plugins/post-transaction-actions.conf"} {
			os.Remove(filepath.Join(dir, f))
		}
		// dpkg's database stays (as status.debian) but is empty, so the
		// probe reads the RPM database, as on Rocky.
		status := filepath.Join(dir, "var/lib/dpkg/status")
		if err := os.Rename(status, status+".debian"); err != nil {
			return err
		}
		if err := os.WriteFile(status, nil, 0o644); err != nil {
			return err
		}
		return run("chroot", dir, "rpm", "--initdb")
	},
}

// suite is the Debian release the root runs.
const suite = "bookworm"

// basePackages are added to debootstrap's minbase: sshd to reach the root,
// procps for ps/pkill in scenario scripts.
var basePackages = []string{"openssh-server", "procps"}

// ci reports whether the tests run in CI, where a missing requirement is a
// failure rather than a skip.
func ci() bool {
	v := os.Getenv("CI")
	return v != "" && v != "false" && v != "0"
}

// unavailable skips the test, or fails it in CI, with the reason.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := "debroot: " + fmt.Sprintf(format, args...)
	if ci() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// requireTools checks that the machine can build and run a root.
func requireTools(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		unavailable(t, "needs root (chroot, unshare and mounts); run the tests as root, as CI does")
	}
	for _, tool := range []string{"debootstrap", "unshare", "chroot", "dpkg-deb", "cp"} {
		if _, err := exec.LookPath(tool); err != nil {
			unavailable(t, "%s not found: install it (apt-get install -y debootstrap util-linux coreutils dpkg; scripts/test.sh does)", tool)
		}
	}
}

// cacheDir returns where cached roots live.
func cacheDir() string {
	if d := os.Getenv("GPUFORM_TEST_CACHE"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "gpuform-test")
	}
	return "/var/cache/gpuform-test"
}

// Mirror returns the Debian archive to debootstrap from: GPUFORM_DEBIAN_MIRROR,
// else the first URI of a Debian archive (not the security archive) that
// this machine's apt sources name, so that the harness uses the mirror the
// machine is configured (and allowed) to reach.
func Mirror() (string, error) {
	if m := os.Getenv("GPUFORM_DEBIAN_MIRROR"); m != "" {
		return m, nil
	}
	files := []string{"/etc/apt/sources.list"}
	more, _ := filepath.Glob("/etc/apt/sources.list.d/*")
	files = append(files, more...)
	for _, f := range files {
		if !strings.HasSuffix(f, ".list") && !strings.HasSuffix(f, ".sources") {
			continue
		}
		if uri := debianURI(f); uri != "" {
			return uri, nil
		}
	}
	return "", fmt.Errorf("no Debian archive in /etc/apt/sources.list(.d); set GPUFORM_DEBIAN_MIRROR to one (it must carry %s)", suite)
}

// debianURI returns the first archive URI in an apt sources file (one-line
// or deb822 format) that serves Debian's main archive.
func debianURI(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") {
			continue
		}
		var uris []string
		switch {
		case strings.HasPrefix(line, "deb "):
			for _, w := range strings.Fields(line)[1:] {
				if strings.HasPrefix(w, "[") || strings.HasSuffix(w, "]") || strings.Contains(w, "=") {
					continue
				}
				uris = append(uris, w)
				break
			}
		case strings.HasPrefix(line, "URIs:"):
			uris = strings.Fields(strings.TrimPrefix(line, "URIs:"))
		}
		for _, u := range uris {
			u = strings.TrimSuffix(u, "/")
			if strings.HasSuffix(u, "/debian") {
				return u
			}
		}
	}
	return ""
}

func base(t testing.TB, v variant) string {
	t.Helper()
	requireTools(t)
	dir := cacheDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		unavailable(t, "cache directory: %v", err)
	}
	root := filepath.Join(dir, v.name)
	lock, err := os.OpenFile(root+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		unavailable(t, "cache lock: %v", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		unavailable(t, "cache lock: %v", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // lock.Close releases it in any case
	if _, err := os.Stat(filepath.Join(root, ".gpuform-debroot")); err == nil {
		return root
	}
	mirror, err := Mirror()
	if err != nil {
		unavailable(t, "%v", err)
	}
	start := time.Now()
	tmp := root + ".building"
	os.RemoveAll(tmp)
	log, err := buildBase(tmp, mirror, v)
	if err != nil {
		os.RemoveAll(tmp)
		unavailable(t, "building the Debian root from %s: %v\n%s", mirror, err, tail(log, 30))
	}
	os.RemoveAll(root)
	if err := os.Rename(tmp, root); err != nil {
		unavailable(t, "%v", err)
	}
	t.Logf("debroot: built %s from %s in %s", root, mirror, time.Since(start).Round(time.Second))
	return root
}

// buildBase runs debootstrap and trims the result to what every test copies.
func buildBase(dir, mirror string, v variant) (string, error) {
	var log strings.Builder
	run := func(name string, args ...string) error {
		cmd := exec.Command(name, args...)
		cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive"}
		out, err := cmd.CombinedOutput()
		log.Write(out)
		if err != nil {
			return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
		}
		return nil
	}
	if err := run("debootstrap", "--variant=minbase", "--include="+strings.Join(v.packages, ","), suite, dir, mirror); err != nil {
		return log.String(), err
	}
	// The tests install only from their own repository; no test may reach
	// the network from inside the root.
	for _, f := range []string{"etc/apt/sources.list"} {
		os.Remove(filepath.Join(dir, f))
	}
	os.RemoveAll(filepath.Join(dir, "var/lib/apt/lists"))
	if err := os.MkdirAll(filepath.Join(dir, "var/lib/apt/lists/partial"), 0o755); err != nil {
		return log.String(), err
	}
	if err := run("chroot", dir, "apt-get", "clean"); err != nil {
		return log.String(), err
	}
	// ssh-keygen at install time made host keys nobody uses: each test
	// brings its own.
	keys, _ := filepath.Glob(filepath.Join(dir, "etc/ssh/ssh_host_*"))
	for _, k := range keys {
		os.Remove(k)
	}
	if v.post != nil {
		if err := v.post(dir, run); err != nil {
			return log.String(), err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ".gpuform-debroot"), []byte(v.name+"\n"+mirror+"\n"), 0o644); err != nil {
		return log.String(), err
	}
	return log.String(), nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
