package bundle

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/gpuform/gpuform/provision/nodesh"
	"github.com/gpuform/gpuform/provision/transport"
)

var (
	//go:embed scripts/stage_have.sh
	stageHaveScript string
	//go:embed scripts/stage_put.sh
	stagePutScript string
	//go:embed scripts/stage_enable.sh
	stageEnableScript string
	//go:embed scripts/stage_enable_dnf.sh
	stageEnableDnfScript string
)

// NodeDir is where a node keeps the bundle repositories apply copied.
const NodeDir = "/var/lib/gpuform/bundle"

// Staged is what Stage did on a node.
type Staged struct {
	// Copied and Kept are the files copied and those the node already
	// held with the right sha256.
	Copied, Kept []string
	// Env is the environment apply gives every step: APT_CONFIG naming
	// the bundle's repository as apt's only source.
	Env map[string]string
}

// Stage copies the repository r of the bundle in dir to the node, only
// the files it lacks (or holds with another sha256: a copy is resumed by
// copying again what did not finish), each verified by its sha256 on the
// node before it is renamed into place, and then writes the apt
// configuration that names it. A failure on the way leaves no apt
// configuration naming the repository. BaseStatus and BaseRPMDB stay
// behind: only bundle -check reads them.
func Stage(ctx context.Context, tr transport.Transport, become bool, m *Manifest, dir string, r *Repo) (*Staged, error) {
	if r.Family != "debian" && r.Family != "rhel" {
		return nil, fmt.Errorf("the bundle's %s repository cannot be installed: apply -bundle installs apt and dnf repositories", r.Family)
	}
	nodeDir := NodeDir + "/" + path.Base(r.Dir)
	type want struct{ name, src string }
	var files []want
	for _, f := range m.Files {
		if strings.HasPrefix(f.Path, r.Dir+"/") && !CheckOnly(f.Path) {
			files = append(files, want{strings.TrimPrefix(f.Path, r.Dir+"/"), f.Path})
		}
	}
	if r.Family == "rhel" {
		if _, ok := m.File(r.Dir + "/" + RepomdSignature); !ok {
			return nil, fmt.Errorf("the bundle's dnf repository %s has no signed metadata (%s; built by an older gpuform?): build the bundle again", r.Dir, RepomdSignature)
		}
	}
	files = append(files, want{"bundle.gpg", KeyFile})
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.name
	}
	have, err := nodeHas(ctx, tr, become, nodeDir, names)
	if err != nil {
		return nil, err
	}
	st := &Staged{}
	for _, f := range files {
		e, ok := m.File(f.src)
		if !ok {
			return nil, fmt.Errorf("the bundle's manifest does not list %s", f.src)
		}
		if have[f.name] == e.SHA256 {
			st.Kept = append(st.Kept, f.src)
			continue
		}
		fh, err := os.Open(filepath.Join(dir, filepath.FromSlash(f.src)))
		if err != nil {
			return nil, err
		}
		_, err = run(ctx, tr, become, stagePutScript, []string{nodeDir, f.name, e.SHA256}, fh, "copy "+f.src)
		fh.Close()
		if err != nil {
			return nil, err
		}
		st.Copied = append(st.Copied, f.src)
	}
	if r.Family == "rhel" {
		if _, err := run(ctx, tr, become, stageEnableDnfScript, []string{nodeDir}, nil, "read the bundle's repository with dnf"); err != nil {
			return nil, err
		}
		st.Env = map[string]string{"GPUFORM_DNF_REPOS": nodeDir + "/repos.d"}
		return st, nil
	}
	if _, err := run(ctx, tr, become, stageEnableScript, []string{nodeDir}, nil, "read the bundle's repository with apt"); err != nil {
		return nil, err
	}
	st.Env = map[string]string{"APT_CONFIG": nodeDir + "/apt.conf"}
	return st, nil
}

// nodeHas makes nodeDir the repository's directory on the node, disabling
// what a stage before enabled there, and returns the sha256 of each of
// names (paths under it) the node holds. The names go on standard input:
// as arguments, a repository of a few thousand files passed the kernel's
// bound on one argument (128 KiB: the script is sh -c's), and the stage
// failed with "argument list too long".
func nodeHas(ctx context.Context, tr transport.Transport, become bool, nodeDir string, names []string) (map[string]string, error) {
	res, err := run(ctx, tr, become, stageHaveScript, []string{nodeDir}, strings.NewReader(strings.Join(names, "\n")+"\n"), "look at the bundle's repository")
	if err != nil {
		return nil, err
	}
	have := map[string]string{}
	for _, l := range strings.Split(string(res), "\n") {
		if sum, name, ok := strings.Cut(l, " "); ok {
			have[name] = sum
		}
	}
	return have, nil
}

func run(ctx context.Context, tr transport.Transport, become bool, script string, args []string, stdin io.Reader, op string) ([]byte, error) {
	cmd := transport.Command{Script: nodesh.Script(script, args), Become: become, Stdin: stdin}
	res, err := tr.Run(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, &transport.HostError{Host: tr.Host(), Op: op, Err: fmt.Errorf("exit %d: %s", res.ExitCode, lastLines(string(res.Stderr), 3))}
	}
	return res.Stdout, nil
}
