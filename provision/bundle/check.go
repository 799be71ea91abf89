package bundle

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gpuform/gpuform/internal/lazyre"
)

// CheckResult is what Check found of one repository.
type CheckResult struct {
	Repo *Repo
	// Problems are apt's words for each release that does not install
	// from the bundle alone ("libnccl-dev : Depends: libnccl2 (= …) but
	// it is not installable"); none means the repository is closed.
	Problems []string
	// Installs is how many packages apt would install.
	Installs int
}

// debArch is the Debian architecture of a uname -m.
func debArch(machine string) string {
	switch machine {
	case "x86_64":
		return "amd64"
	case "aarch64":
		return "arm64"
	}
	return machine
}

// aptProblem is a line of apt's unmet dependencies.
// and of releases it cannot find at all.
var aptProblem = lazyre.New(`(?m)^\s*(\S+ : (Depends|PreDepends|Conflicts|Breaks): .*|E: Version '.*' for '.*' was not found|E: Unable to locate package .*)$`)

// instLine is a line of apt's simulation that installs a package.
var instLine = lazyre.New(`(?m)^Inst `)

// CheckApt proves a repository of the bundle closed: with this machine's
// apt, in a scratch root (its own sources, lists, cache and, as its dpkg
// status, the one the packages were resolved against, BaseStatus) that
// names the bundle's repository as its only source, signed with the
// bundle's key, and with the network disabled (unshare -n), apt reads the
// repository and simulates installing every wanted release. apt's solver
// decides; a dependency the bundle lacks is its "not installable".
func CheckApt(ctx context.Context, dir string, r *Repo, tmp string) (*CheckResult, error) {
	if _, err := exec.LookPath("apt-get"); err != nil {
		return nil, fmt.Errorf("bundle -check of an apt repository needs apt-get on this machine: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp(tmp, "check-")
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"lists/partial", "cache/archives/partial", "empty", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return nil, err
		}
	}
	status, err := os.ReadFile(filepath.Join(abs, filepath.FromSlash(r.Dir), BaseStatus))
	if err != nil {
		return nil, fmt.Errorf("the repository %s has no %s (built by an older gpuform?): %w", r.Dir, BaseStatus, err)
	}
	// A sources.list line cannot name a path with a space (the bundle
	// in "My bundles/"): apt reads the bundle through a link in the
	// scratch root.
	if strings.ContainsAny(root, " \t\n") {
		return nil, fmt.Errorf("the temporary directory %s has a space, which apt's sources.list cannot name: set TMPDIR to another", root)
	}
	link := filepath.Join(root, "bundle")
	if err := os.Symlink(abs, link); err != nil {
		return nil, err
	}
	files := map[string]string{
		"etc/sources.list": fmt.Sprintf("deb [signed-by=%s] file:%s ./\n", filepath.Join(link, KeyFile), filepath.Join(link, filepath.FromSlash(r.Dir))),
		"status":           string(status),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	opts := []string{
		"-o", "Dir::Etc::SourceList=" + filepath.Join(root, "etc/sources.list"),
		"-o", "Dir::Etc::SourceParts=" + filepath.Join(root, "empty"),
		"-o", "Dir::Etc::Parts=" + filepath.Join(root, "empty"),
		"-o", "Dir::Etc::PreferencesParts=" + filepath.Join(root, "empty"),
		"-o", "Dir::Etc::Preferences=" + filepath.Join(root, "empty/none"),
		"-o", "Dir::State::Lists=" + filepath.Join(root, "lists"),
		"-o", "Dir::State::status=" + filepath.Join(root, "status"),
		"-o", "Dir::Cache=" + filepath.Join(root, "cache"),
		"-o", "APT::Architecture=" + debArch(r.Arch),
		"-o", "APT::Sandbox::User=root",
		"-o", "Debug::NoLocking=1",
	}
	if _, err := offline(ctx, append([]string{"apt-get", "update", "-q"}, opts...), nil); err != nil {
		return nil, fmt.Errorf("reading the repository %s with apt, offline: %w", r.Dir, err)
	}
	args := append([]string{"apt-get", "install", "-s", "-q", "--no-install-recommends", "--allow-downgrades"}, opts...)
	out, err := offline(ctx, append(args, r.Wanted...), nil)
	res := &CheckResult{Repo: r, Installs: len(instLine.FindAllString(out, -1))}
	for _, m := range aptProblem.FindAllStringSubmatch(out, -1) {
		res.Problems = append(res.Problems, strings.TrimSpace(m[1]))
	}
	if err != nil && len(res.Problems) == 0 {
		return nil, fmt.Errorf("apt's simulated install from %s: %w", r.Dir, err)
	}
	return res, nil
}

// offline runs argv with the network disabled: a new network namespace
// (unshare -n as root, else in a new user namespace too), which has no
// interface but a loopback that is down.
func offline(ctx context.Context, argv []string, stdin func() (io.Reader, error)) (string, error) {
	if _, err := exec.LookPath("unshare"); err != nil {
		return "", fmt.Errorf("disabling the network needs unshare (util-linux): %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var last error
	for _, prefix := range [][]string{{"unshare", "-n", "--"}, {"unshare", "-r", "-n", "--"}} {
		cmd := exec.CommandContext(ctx, prefix[0], append(prefix[1:], argv...)...)
		cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		if stdin != nil {
			in, err := stdin()
			if err != nil {
				return "", err
			}
			cmd.Stdin = in
		}
		err := cmd.Run()
		if c, ok := cmd.Stdin.(io.Closer); ok {
			c.Close()
		}
		if err == nil {
			return b.String(), nil
		}
		if strings.Contains(b.String(), "unshare failed") || strings.Contains(b.String(), "unshare: ") {
			last = fmt.Errorf("%s: %s", strings.Join(prefix[:len(prefix)-1], " "), strings.TrimSpace(b.String()))
			continue
		}
		return b.String(), fmt.Errorf("%v: %s", err, lastLines(b.String(), 5))
	}
	return "", fmt.Errorf("cannot disable the network for the check: %w", last)
}

// Tools says how CheckDnf runs dnf and rpmdb. The zero Tools runs this
// machine's, on this machine's paths.
type Tools struct {
	// Prefix goes before each command: a way into a root that has the
	// tools (nsenter … chroot DIR). The network is disabled around it.
	Prefix []string
	// Path maps a path of this machine to the one the tools see; nil
	// for the same.
	Path func(string) string
}

func (t Tools) path(p string) string {
	if t.Path == nil {
		return p
	}
	return t.Path(p)
}

// dnfProblem is a line of dnf's that names a release it cannot install:
// an argument it has no match for, or a dependency problem of its
// solver ("  - nothing provides libnccl = 2.21.5-1+cuda12.4 needed by …").
var dnfProblem = lazyre.New(`(?m)^(?:\s*- ((?:nothing provides|package|cannot install|problem with installed package) .*)|(No match for argument: .*))$`)

// dnfInstalls is dnf's transaction summary of what it would install.
var dnfInstalls = lazyre.New(`(?m)^Install\s+(\d+) Packages?$`)

// CheckDnf proves a dnf repository of the bundle closed: with dnf, in a
// scratch installroot whose rpm database is the one the packages were
// resolved against (BaseRPMDB, imported with rpmdb --importdb), with a
// dnf configuration of its own whose only repository is the bundle's and
// with the network disabled (unshare -n), dnf resolves installing every
// wanted release and answers no. The repository's metadata must verify
// with the bundle's key (repo_gpgcheck), as on a node. dnf's solver
// decides; a dependency the bundle lacks is its "nothing provides".
func CheckDnf(ctx context.Context, dir string, r *Repo, tmp string, tools Tools) (*CheckResult, error) {
	if tools.Prefix == nil {
		for _, tool := range []string{"dnf", "rpmdb"} {
			if _, err := exec.LookPath(tool); err != nil {
				return nil, fmt.Errorf("bundle -check of a dnf repository needs dnf and rpm on this machine (a RHEL-family machine, or Debian's dnf and rpm packages): %w", err)
			}
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(abs, filepath.FromSlash(r.Dir), BaseRPMDB)
	if _, err := os.Stat(base); err != nil {
		return nil, fmt.Errorf("the repository %s has no %s: the host that resolved it could not export its rpm database (rpmdb --exportdb, rpm 4.16 and later), so nothing says what the closure was resolved against: %w", r.Dir, BaseRPMDB, err)
	}
	root, err := os.MkdirTemp(tmp, "check-")
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"inst", "repos.d", "cache"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return nil, err
		}
	}
	// dnf splits a repository's baseurl and gpgkey, and the reposdir, at
	// spaces: the bundle (in "My bundles/") is read through a link in the
	// scratch root, relative when the tools see other paths, so that it
	// resolves in their root too.
	if strings.ContainsAny(root, " \t\n") {
		return nil, fmt.Errorf("the temporary directory %s has a space, which dnf's configuration cannot name: set TMPDIR to another", root)
	}
	target := abs
	if tools.Path != nil {
		if rel, err := filepath.Rel(root, abs); err == nil {
			target = rel
		}
	}
	link := filepath.Join(root, "bundle")
	if err := os.Symlink(target, link); err != nil {
		return nil, err
	}
	inst := tools.path(filepath.Join(root, "inst"))
	run := func(stdin func() (io.Reader, error), argv ...string) (string, error) {
		return offline(ctx, append(append([]string(nil), tools.Prefix...), argv...), stdin)
	}
	if _, err := run(nil, "rpmdb", "--root", inst, "--initdb"); err != nil {
		return nil, fmt.Errorf("a scratch rpm database for %s: %w", r.Dir, err)
	}
	if _, err := run(func() (io.Reader, error) { return gunzip(base) }, "rpmdb", "--root", inst, "--importdb"); err != nil {
		return nil, fmt.Errorf("importing the rpm database %s was resolved against: %w", r.Dir, err)
	}
	files := map[string]string{
		"dnf.conf": "[main]\ngpgcheck=0\ninstall_weak_deps=False\nbest=True\nskip_if_unavailable=False\nplugins=0\n",
		"repos.d/gpuform-bundle.repo": fmt.Sprintf("[gpuform-bundle]\nname=gpuform offline bundle\nbaseurl=file://%s\nenabled=1\ngpgcheck=0\nrepo_gpgcheck=1\ngpgkey=file://%s\nskip_if_unavailable=0\nmetadata_expire=0\n",
			tools.path(filepath.Join(link, filepath.FromSlash(r.Dir))), tools.path(filepath.Join(link, KeyFile))),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	argv := []string{"dnf", "--config", tools.path(filepath.Join(root, "dnf.conf")), "--installroot", inst,
		"--setopt=reposdir=" + tools.path(filepath.Join(root, "repos.d")), "--setopt=cachedir=" + tools.path(filepath.Join(root, "cache")),
		"--releasever", releaseMajor(r.OS), "--forcearch", r.Arch, "--noplugins"}
	// makecache -y reads the metadata, its signature checked with the
	// bundle's key, which it imports (the install below answers no to
	// every question, an import's too).
	if out, err := run(nil, append(append([]string(nil), argv...), "-y", "makecache")...); err != nil {
		return nil, fmt.Errorf("dnf cannot read the repository %s (its metadata signed with the bundle's key, offline): %s", r.Dir, lastLines(out, 3))
	}
	argv = append(argv, "--setopt=strict=False", "--assumeno", "install")
	for _, w := range r.Wanted {
		name, v, _ := strings.Cut(w, "=")
		argv = append(argv, name+"-"+v)
	}
	out, err := run(nil, argv...)
	res := &CheckResult{Repo: r}
	if m := dnfInstalls.FindStringSubmatch(out); m != nil {
		res.Installs, _ = strconv.Atoi(m[1])
	}
	for _, m := range dnfProblem.FindAllStringSubmatch(out, -1) {
		res.Problems = append(res.Problems, strings.TrimSpace(m[1]+m[2]))
	}
	// dnf answers no to the transaction it resolved ("Operation
	// aborted.", exit 1), or has nothing to do: a closed repository.
	if len(res.Problems) == 0 && !strings.Contains(out, "Operation aborted.") && !strings.Contains(out, "Nothing to do.") {
		return nil, fmt.Errorf("dnf's resolution of %s from %s alone: %v: %s", strings.Join(r.Wanted, " "), r.Dir, err, lastLines(out, 5))
	}
	return res, nil
}

// releaseMajor is dnf's releasever of an OS as facts read it: "9" of
// "rocky 9.4".
func releaseMajor(osName string) string {
	_, v, _ := strings.Cut(osName, " ")
	major, _, _ := strings.Cut(v, ".")
	return major
}

// gunzip opens a gzipped file for reading, decompressed, at most MaxFile
// bytes of it.
func gunzip(name string) (io.Reader, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	z, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return readCloser{io.LimitReader(z, MaxFile), f}, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}
