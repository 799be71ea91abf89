package bundle

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	files := map[string]string{
		"etc/sources.list": fmt.Sprintf("deb [signed-by=%s] file:%s ./\n", filepath.Join(abs, KeyFile), filepath.Join(abs, filepath.FromSlash(r.Dir))),
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
	if _, err := offline(ctx, append([]string{"apt-get", "update", "-q"}, opts...)); err != nil {
		return nil, fmt.Errorf("reading the repository %s with apt, offline: %w", r.Dir, err)
	}
	args := append([]string{"apt-get", "install", "-s", "-q", "--no-install-recommends", "--allow-downgrades"}, opts...)
	out, err := offline(ctx, append(args, r.Wanted...))
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
func offline(ctx context.Context, argv []string) (string, error) {
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
		err := cmd.Run()
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
