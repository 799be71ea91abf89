package debroot

import (
	"bytes"
	"context"
	"fmt"

	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gpuform/gpuform/internal/sshtest"
	gossh "golang.org/x/crypto/ssh"
)

// Options changes what Start sets up.
type Options struct {
	// Packages are published in the root's apt repository before sshd
	// starts, and the root's package lists are refreshed from it.
	Packages []Deb
	// RPM starts the RPM flavour (RPMBaseVersion: dnf and rpm on a root
	// that reads as Rocky Linux 9) with RPMs published in its dnf
	// repository; Packages is ignored then.
	RPM  bool
	RPMs []RPM
	// Offline runs the root (sshd and everything it starts) in a network
	// namespace of its own, with only the loopback interface up: no route
	// to anything, as on an air-gapped node. The test reaches sshd
	// through a forwarder in this process (127.0.0.1:Port here to the
	// namespace's 127.0.0.1:Port), which is the only way in or out.
	Offline bool
}

// Root is a running Debian root reachable over sshd.
type Root struct {
	// Alias is the host name to give gpuform; SSHConfig resolves it.
	Alias string
	// SSHConfig is an ssh_config naming Alias (127.0.0.1, Port, root,
	// Identity, KnownHosts).
	SSHConfig string
	// KnownHosts holds the root's sshd host key.
	KnownHosts string
	// Identity is the private key authorised to log in as root.
	Identity string
	// Port is where sshd listens on 127.0.0.1.
	Port int
	// Dir is the root as the processes inside the namespace see it (the
	// overlay's merged directory); outside the namespace it is empty.
	Dir string
	// Upper is the overlay's upper directory: every file a test changed.
	Upper string
	// RepoDir is the apt repository (outside the root, bind-mounted at
	// /srv/gpuform-repo inside it).
	RepoDir string

	mu    sync.Mutex
	debs  []Deb
	cmd   *exec.Cmd
	log   *bytes.Buffer
	logMu *sync.Mutex
	t     testing.TB
}

// repoMount is where the repository appears inside the root.
const repoMount = "/srv/gpuform-repo"

// stubbed are the tools that would touch the machine running the tests,
// with where they live in a merged-/usr Debian 12 root. Each is replaced by
// a stub that records its command line and succeeds.
var stubbed = []string{
	"/usr/sbin/reboot", "/usr/sbin/shutdown", "/usr/sbin/poweroff", "/usr/sbin/halt",
	"/usr/sbin/sysctl", "/usr/bin/mount", "/usr/bin/umount",
	"/usr/sbin/modprobe", "/usr/sbin/rmmod", "/usr/sbin/insmod",
	"/usr/sbin/update-grub", "/usr/sbin/grub-mkconfig", "/usr/sbin/grub2-mkconfig", "/usr/sbin/grubby",
	"/usr/sbin/update-initramfs", "/usr/sbin/dkms",
}

// CallsLog is the file inside the root where stubs record their calls.
const CallsLog = "/var/log/gpuform-test/calls.log"

// Start copies the cached root (an overlay over it), publishes
// opts.Packages, starts sshd in a new mount and PID namespace chrooted into
// the root, and returns once sshd answers. Cleanup kills the namespace.
func Start(t testing.TB, opts Options) *Root {
	t.Helper()
	v := debianVariant
	if opts.RPM {
		v = rpmVariant
	}
	base := base(t, v)
	if _, err := exec.LookPath("nsenter"); err != nil {
		unavailable(t, "nsenter not found (util-linux)")
	}
	dir := t.TempDir()
	r := &Root{
		Alias:      "debroot",
		SSHConfig:  filepath.Join(dir, "ssh_config"),
		KnownHosts: filepath.Join(dir, "known_hosts"),
		Identity:   filepath.Join(dir, "id_ed25519"),
		Dir:        filepath.Join(dir, "merged"),
		Upper:      filepath.Join(dir, "upper"),
		RepoDir:    filepath.Join(dir, "repo"),
		log:        &bytes.Buffer{},
		logMu:      &sync.Mutex{},
		t:          t,
	}
	seed := filepath.Join(dir, "seed")
	for _, d := range []string{r.Dir, r.Upper, filepath.Join(dir, "work"), r.RepoDir, seed} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatalf("debroot: %v", err)
		}
	}
	hostKey, userKey := sshtest.NewKey(t), sshtest.NewKey(t)
	sshtest.WritePrivateKey(t, r.Identity, userKey, "")
	hostSigner, err := gossh.NewSignerFromKey(hostKey)
	if err != nil {
		t.Fatalf("debroot: %v", err)
	}
	userSigner, err := gossh.NewSignerFromKey(userKey)
	if err != nil {
		t.Fatalf("debroot: %v", err)
	}
	r.Port = sshtest.FreePort(t)
	cfgDir := filepath.Join(seed, "etc/ssh/gpuform-test")
	must(t, os.MkdirAll(cfgDir, 0o755))
	sshtest.WritePrivateKey(t, filepath.Join(cfgDir, "host_key"), hostKey, "")
	writeFile(t, filepath.Join(cfgDir, "authorized_keys"), gossh.MarshalAuthorizedKey(userSigner.PublicKey()), 0o600)
	writeFile(t, filepath.Join(cfgDir, "sshd_config"), []byte(strings.Join([]string{
		"Port " + strconv.Itoa(r.Port),
		"ListenAddress 127.0.0.1",
		"HostKey /etc/ssh/gpuform-test/host_key",
		"AuthorizedKeysFile /etc/ssh/gpuform-test/authorized_keys",
		"PidFile /run/sshd-gpuform-test.pid",
		"StrictModes no",
		"UsePAM no",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"PermitRootLogin prohibit-password",
		"PrintMotd no",
		"PrintLastLog no",
		"UseDNS no",
		"LogLevel VERBOSE",
		"MaxStartups 100",
		"MaxSessions 50",
		"Subsystem sftp internal-sftp",
	}, "\n")+"\n"), 0o644)
	writeFile(t, r.KnownHosts, []byte(fmt.Sprintf("[127.0.0.1]:%d %s", r.Port, gossh.MarshalAuthorizedKey(hostSigner.PublicKey()))), 0o600)
	writeFile(t, r.SSHConfig, []byte(fmt.Sprintf("Host %s\n  HostName 127.0.0.1\n  Port %d\n  User root\n  IdentityFile %s\n  UserKnownHostsFile %s\n  StrictHostKeyChecking yes\n",
		r.Alias, r.Port, r.Identity, r.KnownHosts)), 0o600)
	r.writeStubs(t, seed)
	if !opts.RPM {
		r.debs = append(r.debs, opts.Packages...)
		r.writeRepo(t)
	}

	// The namespace's first process mounts the root and becomes sshd. A
	// separate PID namespace means killing unshare (--kill-child) takes
	// every process the tests started inside with it, and the mounts go
	// with the mount namespace.
	script := `set -e
L=$1 U=$2 W=$3 M=$4 REPO=$5 SEED=$6
mount --make-rprivate /
if ! mount -t overlay overlay -o "lowerdir=$L,upperdir=$U,workdir=$W" "$M" 2>/dev/null; then
	echo "debroot: overlay unavailable, copying the root" >&2
	cp -a "$L/." "$M/"
fi
cp -a "$SEED/." "$M/"
mount -t proc proc "$M/proc"
mount -t tmpfs -o mode=0755,size=16m tmpfs "$M/dev"
mk() { mknod -m 0666 "$M/dev/$1" c "$2" "$3"; }
mk null 1 3; mk zero 1 5; mk full 1 7; mk random 1 8; mk urandom 1 9; mk tty 5 0
ln -s /proc/self/fd "$M/dev/fd"
ln -s /proc/self/fd/0 "$M/dev/stdin"
ln -s /proc/self/fd/1 "$M/dev/stdout"
ln -s /proc/self/fd/2 "$M/dev/stderr"
mkdir -p "$M/dev/shm" "$M/dev/pts"
mount -t tmpfs -o mode=1777,size=64m tmpfs "$M/dev/shm"
mount -t tmpfs -o mode=0755,size=64m tmpfs "$M/run"
mkdir -p "$M/run/sshd" "$M/run/lock" "$M/srv/gpuform-repo"
mount --bind "$REPO" "$M/srv/gpuform-repo"
exec chroot "$M" /usr/sbin/sshd -D -e -f /etc/ssh/gpuform-test/sshd_config
`
	ns := []string{"--mount", "--pid", "--fork", "--kill-child"}
	if opts.Offline {
		if _, err := exec.LookPath("ip"); err != nil {
			unavailable(t, "ip not found (iproute2): an offline root brings its loopback up with it")
		}
		ns = append(ns, "--net")
		script = "ip link set lo up\n" + script
	}
	cmd := exec.Command("unshare", append(ns, "--", "/bin/bash", "-c", script, "debroot",
		base, r.Upper, filepath.Join(dir, "work"), r.Dir, r.RepoDir, seed)...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatalf("debroot: %v", err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	// The namespace dies with the test binary, however it ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		unavailable(t, "unshare: %v", err)
	}
	pw.Close()
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := pr.Read(buf)
			r.logMu.Lock()
			r.log.Write(buf[:n])
			r.logMu.Unlock()
			if err != nil {
				pr.Close()
				return
			}
		}
	}()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	r.cmd = cmd
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
		}
		if t.Failed() {
			t.Logf("debroot sshd log:\n%s", tail(r.Log(), 60))
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(r.Log(), fmt.Sprintf("Server listening on 127.0.0.1 port %d.", r.Port)) {
		select {
		case <-exited:
			unavailable(t, "the root's sshd exited during start-up:\n%s", r.Log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("debroot: sshd did not start within 30s:\n%s", r.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if opts.Offline {
		r.forward(t)
	}
	if opts.RPM {
		r.PublishRPMs(t, opts.RPMs...)
		return r
	}
	if out, err := r.Exec("apt-get update -q"); err != nil {
		t.Fatalf("debroot: apt-get update in the root: %v\n%s", err, out)
	}
	return r
}

// Log is what the namespace's processes (mount script, sshd -e) printed.
func (r *Root) Log() string {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	return r.log.String()
}

// initPID returns the namespace's first process (sshd), whose namespaces
// nsenter joins.
func (r *Root) initPID() (int, error) {
	pid := r.cmd.Process.Pid
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("the namespace has no process")
	}
	return strconv.Atoi(f[0])
}

// Exec runs a shell script as root inside the root (in its namespaces,
// chrooted) and returns its combined output.
func (r *Root) Exec(script string) (string, error) {
	return r.ExecContext(context.Background(), script)
}

// ExecContext is Exec that kills the command when ctx is done.
func (r *Root) ExecContext(ctx context.Context, script string) (string, error) {
	cmd, err := r.Command(ctx, script)
	if err != nil {
		return "", err
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Command returns the command that runs script inside the root, not started.
func (r *Root) Command(ctx context.Context, script string) (*exec.Cmd, error) {
	pid, err := r.initPID()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "nsenter", "-t", strconv.Itoa(pid), "-m", "-p", "-n", "--", "chroot", r.Dir, "/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", "HOME=/root", "DEBIAN_FRONTEND=noninteractive"}
	return cmd, nil
}

// Run is Exec that fails the test when the script fails.
func (r *Root) Run(t testing.TB, script string) string {
	t.Helper()
	out, err := r.Exec(script)
	if err != nil {
		t.Fatalf("debroot: %s: %v\n%s", script, err, out)
	}
	return out
}

// Calls returns the stubs' recorded command lines, one per call.
func (r *Root) Calls(t testing.TB) []string {
	t.Helper()
	out, _ := r.Exec("cat " + CallsLog + " 2>/dev/null")
	var calls []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" {
			calls = append(calls, l)
		}
	}
	return calls
}

// writeStubs puts the recording stubs and the systemctl stand-in into seed.
func (r *Root) writeStubs(t testing.TB, seed string) {
	t.Helper()
	stub := "#!/bin/sh\n# gpuform test stub: records the call instead of touching the machine.\n" +
		"mkdir -p /var/log/gpuform-test\nprintf '%s\\n' \"${0##*/} $*\" >>" + CallsLog + "\nexit 0\n"
	for _, p := range stubbed {
		writeFile(t, filepath.Join(seed, p), []byte(stub), 0o755)
	}
	// Maintainer scripts must not start services: Debian's switch for chroots.
	writeFile(t, filepath.Join(seed, "usr/sbin/policy-rc.d"), []byte("#!/bin/sh\nexit 101\n"), 0o755)
	// systemctl keeps state the facts probe reads back: the simulated
	// nodes' stand-in, run with the root as its root.
	_, self, _, _ := runtime.Caller(0)
	standins := filepath.Join(filepath.Dir(self), "..", "..", "provision", "sim", "standins")
	dst := filepath.Join(seed, "usr/lib/gpuform-test/standins")
	for _, f := range []string{"systemctl", "gpuform-sim-lib.sh"} {
		b, err := os.ReadFile(filepath.Join(standins, f))
		if err != nil {
			t.Fatalf("debroot: the systemctl stand-in: %v", err)
		}
		writeFile(t, filepath.Join(dst, f), b, 0o755)
	}
	writeFile(t, filepath.Join(seed, ".gpuform-sim-root"), nil, 0o644)
	writeFile(t, filepath.Join(seed, "usr/bin/systemctl"), []byte("#!/bin/sh\nmkdir -p /var/log/gpuform-test\n"+
		"printf '%s\\n' \"systemctl $*\" >>"+CallsLog+"\nGPUFORM_ROOT=/ exec /usr/lib/gpuform-test/standins/systemctl \"$@\"\n"), 0o755)
	must(t, os.MkdirAll(filepath.Join(seed, "etc/systemd/system/multi-user.target.wants"), 0o755))
	writeFile(t, filepath.Join(seed, "etc/apt/sources.list.d/gpuform-test.list"), []byte("deb [trusted=yes] file:"+repoMount+" ./\n"), 0o644)
}

func writeFile(t testing.TB, path string, data []byte, mode os.FileMode) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(path), 0o755))
	must(t, os.WriteFile(path, data, mode))
	must(t, os.Chmod(path, mode))
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("debroot: %v", err)
	}
}

// Enter is the command line that runs a command inside the root (in its
// mount and PID namespaces, chrooted), to put before the command; it
// does not join the root's network namespace, so a caller that has made
// a new one (unshare -n) keeps it. Paths are the root's: RepoDir is
// /srv/gpuform-repo there (RepoPath).
func (r *Root) Enter(t testing.TB) []string {
	t.Helper()
	pid, err := r.initPID()
	if err != nil {
		t.Fatalf("debroot: %v", err)
	}
	return []string{"nsenter", "-t", strconv.Itoa(pid), "-m", "-p", "--", "chroot", r.Dir}
}

// RepoPath is where a path under RepoDir is inside the root.
func (r *Root) RepoPath(t testing.TB, p string) string {
	t.Helper()
	rel, err := filepath.Rel(r.RepoDir, p)
	if err != nil || strings.HasPrefix(rel, "..") {
		t.Fatalf("debroot: %s is not under the repository %s", p, r.RepoDir)
	}
	return filepath.Join(repoMount, rel)
}
